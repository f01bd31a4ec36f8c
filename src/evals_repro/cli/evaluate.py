"""`evals-repro evaluate`: score any TREC run file against TREC qrels, printed like trec_eval."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app


@app.command("evaluate")
def evaluate_command(
    qrels: Optional[Path] = typer.Option(None, "--qrels", help="TREC qrels: `qid 0 docid relevance`."),
    run: Optional[Path] = typer.Option(None, "--run", help="TREC run: `qid Q0 docid rank score tag`."),
    result: Optional[Path] = typer.Option(
        None,
        "--result",
        help="A result file of `evals-repro run`: re-score its saved run against its saved judgments "
        "(measures and tie rule default to the result's).",
    ),
    measure: Optional[list[str]] = typer.Option(
        None, "--measure", "-m", help="Measure(s), repeatable or comma-separated (default: the standard set)."
    ),
    per_query: bool = typer.Option(False, "-q", "--per-query", help="Also print one line per query and measure."),
    trec_names: bool = typer.Option(False, "--trec-names", help="Print trec_eval's measure names (ndcg_cut_10...)."),
    gains: Optional[Path] = typer.Option(
        None, "--gains", help="Float gains in TREC qrels layout (`qid 0 docid 0.897`): adds ndcg_float_at_10."
    ),
    tie_rule: Optional[str] = typer.Option(
        None, "--tie-rule", help="Ties for ndcg_float: group-mean (default) or doc-id."
    ),
) -> None:
    """Score a run like `trec_eval -c`: judged queries missing from the run score 0 and count in the mean."""
    from .. import metrics as M
    from ..errors import UsageError
    from ..metrics.ndcg_float import check_tie_rule, read_trec_gains

    if result is not None:
        if qrels is not None or run is not None or gains is not None:
            raise UsageError(
                "--result re-scores a saved run: it takes no --qrels, --run or --gains", "give one or the other"
            )
        from ..runs import load_saved

        saved = load_saved(result)
        judgments, ranking, float_gains = saved.qrels, saved.run, saved.gains
        measures = M.parse_measures(measure) if measure else list(saved.record.scoring.measures)
        tie_rule = tie_rule or saved.record.scoring.tie_rule
        run = saved.run_path
    else:
        if qrels is None or run is None:
            raise UsageError("evaluate needs --qrels and --run (or --result)", "see `evals-repro evaluate --help`")
        measures = M.parse_measures(measure) if measure else list(M.DEFAULT_MEASURES)
        float_gains = read_trec_gains(gains) if gains else None
        judgments = M.read_trec_qrels(qrels)
        ranking = M.read_trec_run(run)
    tie_rule = check_tie_rule(tie_rule or "group-mean")
    if float_gains is not None and not any(m.startswith("ndcg_float_at_") for m in measures):
        measures.append("ndcg_float_at_10")
    per_query_scores = M.evaluate(judgments, ranking, measures, gains=float_gains, options={"tie_rule": tie_rule})
    missing = [qid for qid in per_query_scores if not ranking.get(qid)]
    if missing:
        typer.echo(
            f"warning: {len(missing)} of {len(per_query_scores)} judged queries have no results in {run} "
            f"and score 0 (first: {', '.join(missing[:5])})",
            err=True,
        )
    for line in M.trec_eval_lines(per_query_scores, measures, per_query_lines=per_query, trec_names=trec_names):
        typer.echo(line)

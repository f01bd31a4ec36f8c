"""`evals-repro evaluate`: score any TREC run file against TREC qrels, printed like trec_eval."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app
from .options import TieRule, value_of


@app.command("evaluate")
def evaluate_command(
    qrels: Path = typer.Option(..., "--qrels", help="TREC qrels: `qid 0 docid relevance`."),
    run: Path = typer.Option(..., "--run", help="TREC run: `qid Q0 docid rank score tag`."),
    measure: Optional[list[str]] = typer.Option(
        None, "--measure", "-m", help="Measure(s), repeatable or comma-separated (default: the standard set)."
    ),
    per_query: bool = typer.Option(False, "-q", "--per-query", help="Also print one line per query and measure."),
    trec_names: bool = typer.Option(False, "--trec-names", help="Print trec_eval's measure names (ndcg_cut_10...)."),
    gains: Optional[Path] = typer.Option(
        None, "--gains", help="Float gains in TREC qrels layout (`qid 0 docid 0.897`): adds ndcg_float_at_10."
    ),
    tie_rule: TieRule = typer.Option(TieRule.group_mean, "--tie-rule", help="How ndcg_float treats tied scores."),
) -> None:
    """Score a run like `trec_eval -c`: judged queries missing from the run score 0 and count in the mean."""
    from .. import metrics as M
    from ..metrics.ndcg_float import check_tie_rule, read_trec_gains

    rule = value_of(tie_rule)
    check_tie_rule(rule)
    measures = M.parse_measures(measure) if measure else list(M.DEFAULT_MEASURES)
    float_gains = read_trec_gains(gains) if gains else None
    if float_gains is not None and not any(m.startswith("ndcg_float_at_") for m in measures):
        measures.append("ndcg_float_at_10")
    judgments = M.read_trec_qrels(qrels)
    ranking = M.read_trec_run(run)
    per_query_scores = M.evaluate(judgments, ranking, measures, gains=float_gains, options={"tie_rule": rule})
    missing = [qid for qid in per_query_scores if not ranking.get(qid)]
    if missing:
        typer.echo(
            f"warning: {len(missing)} of {len(per_query_scores)} judged queries have no results in {run} "
            f"and score 0 (first: {', '.join(missing[:5])})",
            err=True,
        )
    for line in M.trec_eval_lines(per_query_scores, measures, per_query_lines=per_query, trec_names=trec_names):
        typer.echo(line)

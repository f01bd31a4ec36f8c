"""`evals-repro evaluate`: score any TREC run file against TREC qrels, printed like trec_eval."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .application import app
from .options import ScorePrecision, TieRule, value_of

MEASURE_HELP = (
    "Measure(s), repeatable or comma-separated: ours (ndcg_at_10, p_at_5, mrr_at_10, success_at_5, judged_at_10, "
    "alpha_ndcg_at_10) or trec_eval's (ndcg_cut.10, P.5,10, P_5, recip_rank, Rprec, bpref, all_trec, official). "
    "Default: the standard set."
)
PRECISION_HELP = (
    "How scores are compared: float32 = trec_eval 9.x / pytrec_eval (the default, what mteb and BEIR report), "
    "float64 = trec_eval 10.x (doubles; also its rounding of iprec_at_recall / 11pt_avg recall points)."
)


@app.command("evaluate")
def evaluate_command(
    qrels: Optional[Path] = typer.Option(
        None, "--qrels", help="TREC qrels `qid 0 docid relevance` (`#` comments, gzip read)."
    ),
    run: Optional[str] = typer.Option(
        None, "--run", help="TREC run `qid Q0 docid rank score tag [...]`; `-` reads stdin."
    ),
    result: Optional[Path] = typer.Option(
        None,
        "--result",
        help="A result file of `evals-repro run`: re-score its saved run against its saved judgments "
        "(measures and the whole scoring protocol default to the result's; options given override them).",
    ),
    measure: Optional[list[str]] = typer.Option(None, "--measure", "-m", help=MEASURE_HELP),
    per_query: bool = typer.Option(False, "-q", "--per-query", help="Also print one line per query and measure."),
    trec_names: Optional[bool] = typer.Option(
        None,
        "--trec-names/--our-names",
        help="Print trec_eval's measure names (ndcg_cut_10, P_5) or ours (ndcg_at_10, p_at_5). "
        "Default: trec_eval's when every -m is a trec_eval spelling, else ours.",
    ),
    precision_choice: Optional[ScorePrecision] = typer.Option(None, "--score-precision", help=PRECISION_HELP),
    relevance_level: Optional[int] = typer.Option(
        None, "-l", "--relevance-level", help="Minimum grade counted relevant by binary measures (trec_eval -l; 1)."
    ),
    max_results: Optional[int] = typer.Option(
        None, "-M", "--max-results", help="Only the first N results of each query count (trec_eval -M)."
    ),
    judged_only: bool = typer.Option(
        False, "-J", "--judged-only", help="Drop unjudged documents from rankings first (trec_eval -J)."
    ),
    complete: Optional[bool] = typer.Option(
        None,
        "--complete/--no-complete",
        "-c/-C",
        help="Score judged queries without results as 0 (trec_eval -c, the default); -C skips them (trec_eval 9).",
    ),
    no_summary: bool = typer.Option(False, "-n", "--no-summary", help="Print no `all` lines (trec_eval -n)."),
    ignore_identical_ids: bool = typer.Option(
        False,
        "--ignore-identical-ids",
        help="Drop a retrieved document whose id equals the query id before scoring (BEIR's and mteb's "
        "evaluator, for tasks such as FiQA2018 that set it).",
    ),
    gains: Optional[Path] = typer.Option(
        None, "--gains", help="Float gains in TREC qrels layout (`qid 0 docid 0.897`): adds ndcg_float_at_10."
    ),
    tie_choice: Optional[TieRule] = typer.Option(
        None, "--tie-rule", help="Ties for float gains (needs --gains; default group-mean)."
    ),
    subtopic_qrels: Optional[Path] = typer.Option(
        None,
        "--subtopic-qrels",
        help="Subtopic qrels `qid subtopic docid relevance` (ndeval): adds alpha_ndcg_at_10; "
        "also serves as --qrels when that is not given.",
    ),
) -> None:
    """Score a run like `trec_eval -c`: every judged query counts, one without results scores 0."""
    from ..base.errors import UsageError
    from ..metrics.trec_io.evaluate_files import evaluate_files

    tie_rule = value_of(tie_choice) if tie_choice is not None else None
    score_precision = value_of(precision_choice) if precision_choice is not None else None

    if result is not None:
        if qrels is not None or run is not None or gains is not None or subtopic_qrels is not None:
            raise UsageError(
                "--result re-scores a saved run: it takes no --qrels, --run, --gains or --subtopic-qrels",
                "give one or the other",
            )
        from ..records.runs import checked_record

        record = checked_record(result)  # every saved file checked against the record's sha256
        folder, scoring = Path(result).parent, record.scoring
        qrels, run = folder / record.run.qrels_path, str(folder / record.run.path)
        gains = folder / record.run.gains_path if record.run.gains_path else None
        measure = measure or list(scoring.measures)
        tie_rule = tie_rule or (scoring.tie_rule if gains is not None else None)
        # The whole protocol of the result is the default; options given override it.
        score_precision = score_precision or scoring.score_precision
        relevance_level = scoring.relevance_level if relevance_level is None else relevance_level
        max_results = scoring.max_results if max_results is None else max_results
        judged_only = judged_only or scoring.judged_only
        complete = scoring.complete if complete is None else complete
        ignore_identical_ids = ignore_identical_ids or scoring.ignore_identical_ids
    if tie_rule is not None and gains is None:
        raise UsageError(
            "--tie-rule applies only to float-gain measures (ndcg_float_at_k)",
            "pass --gains FILE with it, or drop --tie-rule",
        )
    if run is None:
        raise UsageError("evaluate needs --qrels and --run (or --result)", "see `evals-repro evaluate --help`")
    if qrels is None and subtopic_qrels is None:
        raise UsageError("no qrels given", "pass --qrels FILE (or --subtopic-qrels FILE for diversity qrels)")
    given = {
        "tie_rule": tie_rule,
        "score_precision": score_precision,
        "relevance_level": relevance_level,
        "max_results": max_results,
        "judged_only": judged_only or None,
        "complete": complete,
        "ignore_identical_ids": ignore_identical_ids or None,
    }
    outcome = evaluate_files(
        qrels=qrels,
        run=run,
        measures=measure or None,
        per_query=per_query,
        trec_names=trec_names,
        summary=not no_summary,
        gains=gains,
        subtopic_qrels=subtopic_qrels,
        protocol_options={name: value for name, value in given.items() if value is not None},
    )
    for warning in outcome.warnings:
        typer.echo(f"warning: {warning}", err=True)
    for line in outcome.lines:
        typer.echo(line)

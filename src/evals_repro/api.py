"""The Python API: what the CLI does, as two functions a notebook can call.

    import evals_repro
    summary = evals_repro.run("bm25", benchmark="sample", setting="crosslingual")
    scores = evals_repro.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.9, "d2": 0.5}}, ["ndcg_at_10", "map"])
    scores.mean["ndcg_at_10"], scores.per_query["q1"]["map"]

`run` writes the same result records and saved runs as `evals-repro run` and returns a `RunSummary`
(outcome per subset, failures, usage); `evaluate` scores in memory, trec_eval-style. Messages go to
the `evals_repro` logger rather than to stdout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .evaluation import RunRequest, RunSummary, run_benchmark


@dataclass(frozen=True)
class Scores:
    """Per-query scores (`{qid: {measure: value}}`) and their macro means (`{measure: value}`)."""

    per_query: dict[str, dict[str, float]]
    mean: dict[str, float]


def run(
    method: str,
    benchmark: str = "sample",
    *,
    subsets: Sequence[str] | None = None,
    setting: str = "monolingual",
    top_k: int = 100,
    measures: Sequence[str] | None = None,
    results_dir: str | Path = "results",
    cache_dir: str | Path = "cache",
    resume: bool = False,
    content: str = "markdown",
    revision: str | None = None,
    tie_rule: str = "group-mean",
    score_precision: str = "float32",
    rerank: str | None = None,
    rerank_depth: int | None = None,
    **options: Any,
) -> RunSummary:
    """Evaluate `method` on `benchmark` (see `evals-repro run --help`); `options` are the provider and
    method options (`workers=4`, `voyage_tpm=...`, `rerank_top_k=10`, ...)."""
    request = RunRequest(
        method=method,
        benchmark=benchmark,
        subsets=list(subsets) if subsets else None,
        setting=setting,
        top_k=top_k,
        results_dir=Path(results_dir),
        cache_dir=Path(cache_dir),
        resume=resume,
        content=content,
        revision=revision,
        measures=list(measures) if measures else None,
        tie_rule=tie_rule,
        score_precision=score_precision,
        rerank=rerank,
        rerank_depth=rerank_depth,
        options=dict(options),
    )
    return run_benchmark(request)


def evaluate(
    qrels: Mapping[str, Mapping[str, int]] | str | Path,
    run: Mapping[str, Mapping[str, float]] | str | Path,
    measures: Sequence[str] | None = None,
    **options: Any,
) -> Scores:
    """Score a run against qrels (dicts, or TREC files) like `trec_eval -c`; `measures` default to the standard set."""
    from . import metrics as M

    judgments = M.read_trec_qrels(qrels) if isinstance(qrels, (str, Path)) else qrels
    ranking = M.read_trec_run(run) if isinstance(run, (str, Path)) else run
    names = M.parse_measures(list(measures)) if measures else list(M.DEFAULT_MEASURES)
    per_query = M.evaluate(judgments, ranking, names, options=options)
    return Scores(per_query={q: dict(v) for q, v in per_query.items()}, mean=M.mean(per_query))

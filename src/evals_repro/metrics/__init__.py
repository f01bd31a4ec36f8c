"""Retrieval measures computed like trec_eval (through pytrec_eval), named `ndcg_at_10` style.

Public API:
- `DEFAULT_MEASURES`: the names the harness reports.
- `parse_measures(names) -> list[str]`, `get_measure(name) -> Measure` (UsageError if unknown).
- `ScoringProtocol(measures, tie_rule, score_precision, ...)`: every choice that changes a score.
- `evaluate(qrels, run, protocol | measures, *, gains=None) -> {qid: {measure: value}}`.
- `mean(per_query, qids=None) -> {measure: value}` (macro average).
- `read_trec_run(path)`, `read_trec_qrels(path)`; `trec_eval_lines(...)` prints like trec_eval.
- `register(Family(...))` to plug in another measure family.
- `trec_ranked(scores, top_k=None)`: one query's ranking in trec_eval order (float32 ties, doc id desc).

Importing this package is cheap: pytrec_eval and NumPy load on first evaluation.
"""

from __future__ import annotations

# Registration order is the order of the valid forms in error messages; trec_eval's spellings come last.
# isort: off
from . import ndcg, ap, recall, precision, rr, success, judged, ndcg_float, diversity, coverage, p_mrr  # noqa: F401
from . import trec_measures

# isort: on
from .base import (
    FAMILIES,
    EvalData,
    Family,
    Measure,
    PerQuery,
    expand_measure,
    get_measure,
    measure_forms,
    parse_measures,
    register,
)

register(trec_measures.FAMILY)

from .evaluate import aggregate, evaluate, judged_queries, mean, scored_queries  # noqa: E402
from .protocol import DEFAULT_MEASURES, ScoringProtocol  # noqa: E402
from .ranking import trec_ranked  # noqa: E402
from .trec_files import iter_columns, read_trec_qrels, read_trec_run  # noqa: E402
from .trec_output import trec_eval_lines  # noqa: E402

__all__ = [
    "DEFAULT_MEASURES",
    "aggregate",
    "expand_measure",
    "judged_queries",
    "FAMILIES",
    "EvalData",
    "Family",
    "Measure",
    "PerQuery",
    "ScoringProtocol",
    "evaluate",
    "get_measure",
    "iter_columns",
    "mean",
    "measure_forms",
    "parse_measures",
    "read_trec_qrels",
    "read_trec_run",
    "register",
    "scored_queries",
    "trec_eval_lines",
    "trec_ranked",
]

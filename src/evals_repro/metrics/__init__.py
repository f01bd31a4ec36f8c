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

# Registration order is the order of the valid forms in error messages.
from . import (
    ap,  # noqa: F401
    coverage,  # noqa: F401
    diversity,  # noqa: F401
    ndcg,  # noqa: F401,I001
    ndcg_float,  # noqa: F401
    p_mrr,  # noqa: F401
    precision,  # noqa: F401
    recall,  # noqa: F401
    rr,  # noqa: F401
)
from .base import FAMILIES, EvalData, Family, Measure, PerQuery, get_measure, measure_forms, parse_measures, register
from .evaluate import evaluate, mean, scored_queries
from .protocol import DEFAULT_MEASURES, ScoringProtocol
from .ranking import trec_ranked
from .trec_files import iter_columns, read_trec_qrels, read_trec_run
from .trec_output import trec_eval_lines

__all__ = [
    "DEFAULT_MEASURES",
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

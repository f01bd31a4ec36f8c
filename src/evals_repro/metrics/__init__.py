"""Retrieval measures computed like trec_eval (through pytrec_eval), named `ndcg_at_10` style.

Public API:
- `DEFAULT_MEASURES`: the names the harness reports.
- `parse_measures(names) -> list[str]`: ours (`ndcg_at_10`, `nDCG@10`) or trec_eval's spellings
  (`ndcg_cut.10`, `P.5,10`, `P_5`, `recip_rank`, `all_trec`, `official`), canonical names out;
  `get_measure(name) -> Measure`, `expand_measure(spec) -> list[Measure]` (UsageError if unknown).
- `ScoringProtocol(measures, tie_rule, score_precision, relevance_level, max_results, judged_only,
  complete)`: every choice that changes a score (metrics/protocol.py).
- `evaluate(qrels, run, protocol | measures, *, gains=None, subtopics=None) -> {qid: {measure: value}}`:
  every judged query is scored (one with no relevant document or no result scores 0).
- `mean(per_query, qids=None) -> {measure: value}`: the `all` values (means; counts summed, gm_* geometric).
- `read_trec_run(path)`, `read_trec_qrels(path)` (`-` = stdin, gzip, `#` comments); `trec_eval_lines(...)`.
- `register(Family(...))` to plug in another measure family.
- `trec_ranked(scores, top_k=None, precision="float32")`: one query's ranking in trec_eval order.
- `diversity.alpha_ndcg_at_k(subtopic_qrels, run, k)`, `diversity.err_ia_at_k(...)`: ndeval measures.

Importing this package is cheap: the measure families load on the first lookup of a measure name
(`protocol.families()`), the TREC file readers on first use, pytrec_eval, pyndeval and NumPy on first
evaluation; so `from ..metrics.protocol import ScoringProtocol` in a module a refusal imports costs little.

Layer: sources. May import base only; read by every layer above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# `evaluate` is also the name of a submodule: bound here, before anything can import that submodule and leave
# the module object where the function belongs.
from .evaluate import aggregate, evaluate, judged_queries, mean, scored_queries  # noqa: E402
from .protocol import (
    DEFAULT_MEASURES,
    FAMILIES,
    EvalData,
    Family,
    Measure,
    PerQuery,
    ScoringProtocol,
    expand_measure,
    get_measure,
    measure_forms,
    parse_measures,
    register,
)
from .ranking import trec_ranked  # noqa: E402
from .trec_io.write import trec_eval_lines  # noqa: E402

if TYPE_CHECKING:
    from .trec_io.read import iter_columns, read_trec_qrels, read_trec_run

_READERS = ("iter_columns", "read_trec_qrels", "read_trec_run")  # gzip and zlib: loaded when a file is read


def __getattr__(name: str) -> Any:
    if name in _READERS:
        from .trec_io import read

        return getattr(read, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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

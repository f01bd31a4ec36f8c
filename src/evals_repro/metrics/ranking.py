"""trec_eval's ranking order: score descending, then doc id descending (string comparison).

trec_eval 9.x (and pytrec_eval, which embeds it) keeps scores as C floats, so two scores equal
after float32 rounding are a tie; trec_eval 10.x compares doubles. `precision` picks one:
"float32" (the default) or "float64". Cutting rankings in this same order keeps our cutoffs
and theirs on the same documents.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Mapping

from ..base.errors import DataError


def check_scores(qid: str, scores: Mapping[str, float]) -> None:
    """A NaN score is a DataError naming the query and document (inf is a valid score)."""
    if scores and not math.isfinite(sum(scores.values())):
        for doc, value in scores.items():
            if math.isnan(value):
                raise DataError(
                    f"run: query {qid} document {doc} has a NaN score", "every retrieved document needs a numeric score"
                )


def as_float32(qid: str, scores: Mapping[str, float]) -> dict[str, float]:
    """One query's scores rounded to float32 (as Python floats); NaN is a DataError.

    `array("f")` applies the same C double-to-float cast trec_eval 9 does (beyond float32's
    range becomes +-inf).
    """
    if not scores:
        return {}
    check_scores(qid, scores)
    return dict(zip(scores, array("f", scores.values()).tolist()))


def ranked_docs(scores: Mapping[str, float], precision: str = "float32", depth: int | None = None) -> list[str]:
    """Doc ids in trec_eval order under `precision`, the first `depth` only when given."""
    values = array("f", scores.values()).tolist() if precision == "float32" else list(scores.values())
    if depth is not None and depth < len(values):
        top = heapq.nlargest(depth, zip(values, scores))
    else:
        top = sorted(zip(values, scores), reverse=True)
    return [doc for _, doc in top]


def trec_ranked(
    scores: Mapping[str, float], top_k: int | None = None, precision: str = "float32"
) -> list[tuple[str, float]]:
    """(doc id, score) pairs in trec_eval order (float32 ties by default, doc id descending).

    The scores returned are the caller's own; only the order follows trec_eval.
    """
    return [(doc, scores[doc]) for doc in ranked_docs(scores, precision, top_k)]


def truncate(scores: Mapping[str, float], depth: int, precision: str = "float32") -> dict[str, float]:
    """The top `depth` documents of one query in trec_eval order, with their own scores."""
    if len(scores) <= depth:
        return dict(scores)
    return {doc: scores[doc] for doc in ranked_docs(scores, precision, depth)}


def rank_scores(order: list[str]) -> dict[str, float]:
    """Scores that make any trec_eval rank `order` as given: n, n-1, ..., 1 (exact in float32)."""
    n = len(order)
    return {doc: float(n - i) for i, doc in enumerate(order)}

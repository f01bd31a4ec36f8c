"""trec_eval's ranking order: score descending as 32-bit floats, then doc id descending.

trec_eval keeps scores as C floats, so two scores that are equal after float32 rounding are a
tie, broken by doc id (string comparison, descending). Rounding every score to float32 before
pytrec_eval sees it, and cutting rankings in this same order, keeps our cutoffs and theirs
on the same documents.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Mapping

from ..errors import DataError


def as_float32(qid: str, scores: Mapping[str, float]) -> dict[str, float]:
    """One query's scores rounded to float32 (as Python floats); NaN is a DataError.

    `array("f")` applies the same C double-to-float cast trec_eval does (beyond float32's
    range becomes +-inf).
    """
    if not scores:
        return {}
    values = list(scores.values())
    if not math.isfinite(sum(values)):
        for doc, value in scores.items():
            if math.isnan(value):
                raise DataError(
                    f"run: query {qid} document {doc} has a NaN score", "every retrieved document needs a numeric score"
                )
    return dict(zip(scores, array("f", values).tolist()))


def trec_ranked(scores: Mapping[str, float], top_k: int | None = None) -> list[tuple[str, float]]:
    """(doc id, score) pairs in trec_eval order, float32 ties broken by doc id descending.

    The scores returned are the caller's own; only the order follows trec_eval.
    """
    rounded = array("f", scores.values()).tolist()
    order = sorted(zip(rounded, scores), reverse=True)
    if top_k is not None:
        order = order[:top_k]
    return [(doc, scores[doc]) for _, doc in order]


def truncate(scores: Mapping[str, float], depth: int) -> dict[str, float]:
    """The top `depth` documents of one query in trec_eval order; expects `as_float32` scores."""
    if len(scores) <= depth:
        return dict(scores)
    threshold = heapq.nlargest(depth, scores.values())[-1]
    # Everything above the depth-th score is in; ties at it are ordered by doc id descending.
    top = sorted(((score, doc) for doc, score in scores.items() if score >= threshold), reverse=True)
    return {doc: score for score, doc in top[:depth]}

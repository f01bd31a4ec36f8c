"""trec_eval's ranking order: score descending as 32-bit floats, then doc id descending.

trec_eval keeps scores as C floats, so two scores that are equal after float32 rounding are a
tie, broken by doc id (string comparison, descending). Rounding every score to float32 before
pytrec_eval sees it, and cutting rankings in this same order, keeps our cutoffs and theirs
on the same documents.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import DataError


def as_float32(qid: str, scores: Mapping[str, float]) -> dict[str, float]:
    """One query's scores rounded to float32 (as Python floats); NaN is a DataError."""
    import numpy as np

    if not scores:
        return {}
    docs = list(scores)
    values = np.asarray([scores[d] for d in docs], dtype=np.float64)
    bad = np.flatnonzero(np.isnan(values))
    if bad.size:
        raise DataError(f"run: query {qid} document {docs[int(bad[0])]} has a NaN score",
                        "every retrieved document needs a numeric score")
    with np.errstate(over="ignore"):  # beyond float32's range becomes +-inf, as in trec_eval
        rounded = values.astype(np.float32).astype(np.float64).tolist()
    return dict(zip(docs, rounded))


def trec_order(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """(doc id, float32 score) pairs in trec_eval order; expects `as_float32` scores."""
    ordered = sorted(((score, doc) for doc, score in scores.items()), reverse=True)
    return [(doc, score) for score, doc in ordered]


def truncate(scores: Mapping[str, float], depth: int) -> dict[str, float]:
    """The top `depth` documents of one query in trec_eval order."""
    if len(scores) <= depth:
        return dict(scores)
    return dict(trec_order(scores)[:depth])

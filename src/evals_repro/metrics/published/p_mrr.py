"""p-MRR (`p_mrr`), FollowIR's pairwise instruction-following measure.

A pair is one query asked with its original instruction (`<pair>-og`) and with a changed one
(`<pair>-changed`); `changed_docs[pair]` lists the documents whose judgment the change flipped
(FollowIR's `qrel_diff`). For each such document, with R_og and R_new its 1-based ranks in the
og and changed rankings:

    s = R_new / R_og - 1   if R_og >= R_new   (it moved up, or stayed: <= 0)
    s = 1 - R_og / R_new   otherwise          (it moved down, as the narrower instruction asks: > 0)

A document missing from a ranking takes rank `depth + 1` (the ranking's length + 1 unless
`depth` says how deep it was cut: 101 for a top 100). A pair scores the mean of its documents'
s; p-MRR is the mean over pairs, in [-1, 1]. Rankings follow the trec_eval order (float32 ties
by doc id descending; mteb's HEAD breaks exact ties by doc id descending too).

As mteb's `calculate_pmrr` (mteb a905523d0, _evaluators/retrieval_metrics.py), to the last digit: a
pair whose og or changed ranking is absent from the run is skipped (not scored as an empty ranking;
an empty ranking counts as absent, since a TREC run file cannot hold one); s is computed as
(1/R_og)/(1/R_new) - 1 and 1 - (1/R_new)/(1/R_og); a pair's mean is pandas' groupby mean
(compensated, Kahan) and p-MRR the pandas/NumPy mean over pairs in pair-id order (pairwise sum).

As a per-query measure (`evaluate(..., ["p_mrr"], options={"changed_docs": ...})`) both rows of
a pair carry the pair's score, so the mean over rows equals the mean over pairs whenever both
variants of every pair are scored; `p_mrr()` averages over pairs directly.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import UsageError
from ..protocol import EvalData, Family, Measure, PerQuery, register
from ..ranking import check_scores, ranked_docs

OG, CHANGED = "og", "changed"


def rank_change(og_rank: int, new_rank: int) -> float:
    """One document's score: negative when the changed instruction moved it up, positive when down
    (mteb's `rank_score` arithmetic: ratios of reciprocal ranks)."""
    if og_rank >= new_rank:
        return (1 / og_rank) / (1 / new_rank) - 1
    return 1 - (1 / new_rank) / (1 / og_rank)


def kahan_mean(values: list[float]) -> float:
    """pandas' groupby mean: a compensated (Kahan) sum over the values in order, divided by their count."""
    total = compensation = 0.0
    for value in values:
        y = value - compensation
        t = total + y
        compensation = t - total - y
        total = t
    return total / len(values)


def numpy_mean(values: list[float]) -> float:
    """pandas' Series.mean: NumPy's pairwise sum of a float64 array, divided by the count."""
    import numpy as np

    return float(np.asarray(values, dtype=np.float64).sum() / len(values))


def _ranks(scores: Mapping[str, float], precision: str) -> dict[str, int]:
    return {doc: i for i, doc in enumerate(ranked_docs(scores, precision), start=1)}


def pair_scores(
    run: Mapping[str, Mapping[str, float]],
    changed_docs: Mapping[str, list[str]],
    *,
    depth: int | None = None,
    score_precision: str = "float32",
) -> dict[str, float]:
    """pair -> mean rank change of its changed documents, in pair-id order (pairs with no changed document,
    or whose og or changed ranking is absent from the run, are left out, as mteb leaves them out)."""
    scores = {}
    for pair in sorted(changed_docs):
        docs = changed_docs[pair]
        if not docs or not run.get(f"{pair}-{OG}") or not run.get(f"{pair}-{CHANGED}"):
            continue
        rankings = []
        for variant in (OG, CHANGED):
            ranking = run[f"{pair}-{variant}"]
            check_scores(f"{pair}-{variant}", ranking)
            ranks = _ranks(ranking, score_precision)
            missing = (len(ranks) if depth is None else max(depth, len(ranks))) + 1
            rankings.append((ranks, missing))
        (og, og_missing), (new, new_missing) = rankings
        scores[pair] = kahan_mean([rank_change(og.get(doc, og_missing), new.get(doc, new_missing)) for doc in docs])
    return scores


def p_mrr(
    run: Mapping[str, Mapping[str, float]],
    changed_docs: Mapping[str, list[str]],
    *,
    depth: int | None = None,
    score_precision: str = "float32",
) -> float:
    """The mean of `pair_scores` over pairs (0.0 when no pair can be scored)."""
    scores = pair_scores(run, changed_docs, depth=depth, score_precision=score_precision)
    return numpy_mean(list(scores.values())) if scores else 0.0


def pair_of(qid: str) -> str | None:
    """`305` for `305-og` or `305-changed`, None for any other id."""
    pair, _, variant = qid.rpartition("-")
    return pair if variant in (OG, CHANGED) and pair else None


def _compute(measures: list[Measure], data: EvalData) -> PerQuery:
    changed = data.options.get("changed_docs")
    if changed is None:
        raise UsageError("p_mrr needs the changed documents of each pair", 'pass options={"changed_docs": ...}')
    scores = pair_scores(
        data.run, changed, depth=data.options.get("depth"), score_precision=data.protocol.score_precision
    )
    out: PerQuery = {}
    for qid in data.qids:
        pair = pair_of(qid)
        out[qid] = {m.name: scores.get(pair, 0.0) if pair is not None else 0.0 for m in measures}
    return out


def _parse(text: str) -> Measure | None:
    return Measure("p_mrr", "p-MRR", _compute) if text in ("p_mrr", "p-mrr", "pmrr") else None


FAMILY = register(Family("p_mrr", ("p_mrr",), _parse))

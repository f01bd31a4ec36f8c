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
(1/R_og)/(1/R_new) - 1 and 1 - (1/R_new)/(1/R_og); a pair's mean and the mean over pairs are taken
by pandas itself, with the same calls (`groupby("qid").agg(mean)`, then `Series.mean`): pandas' group
sum is not a plain Kahan sum in every release (3.x differs from one in the last bit), so only pandas
gives mteb's digits under the pandas installed beside it.

As a per-query measure (`evaluate(..., ["p_mrr"], options={"changed_docs": ...})`) both rows of
a pair carry the pair's score, so the mean over rows equals the mean over pairs whenever both
variants of every pair are scored; `p_mrr()` averages over pairs directly.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...base.errors import UsageError
from ..protocol import EvalData, Family, Measure, PerQuery, register
from ..ranking import check_scores, ranked_docs

OG, CHANGED = "og", "changed"


def rank_change(og_rank: int, new_rank: int) -> float:
    """One document's score: negative when the changed instruction moved it up, positive when down
    (mteb's `rank_score` arithmetic: ratios of reciprocal ranks)."""
    if og_rank >= new_rank:
        return (1 / og_rank) / (1 / new_rank) - 1
    return 1 - (1 / new_rank) / (1 / og_rank)


def pandas_means(rows: list[tuple[str, float]]) -> tuple[dict[str, float], float]:
    """(pair -> mean of its rows, mean over pairs), computed as mteb computes them: a DataFrame grouped by
    pair id (sorted), mean per group, then the mean of those means."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=["qid", "p-MRR"])
    per_pair = frame.groupby("qid").agg({"p-MRR": "mean"})["p-MRR"]
    return {str(pair): float(value) for pair, value in per_pair.items()}, float(per_pair.mean())


def _ranks(scores: Mapping[str, float], precision: str) -> dict[str, int]:
    return {doc: i for i, doc in enumerate(ranked_docs(scores, precision), start=1)}


def _rows(
    run: Mapping[str, Mapping[str, float]],
    changed_docs: Mapping[str, list[str]],
    depth: int | None,
    score_precision: str,
) -> list[tuple[str, float]]:
    """(pair, rank change) per changed document, in mteb's row order: pairs as `changed_docs` lists them,
    documents as each pair lists them (pandas' group sums depend on the rows before a group, so the
    order matters to the last digit). Pairs whose og or changed ranking is absent are left out."""
    rows: list[tuple[str, float]] = []
    for pair, docs in changed_docs.items():
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
        rows.extend((pair, rank_change(og.get(doc, og_missing), new.get(doc, new_missing))) for doc in docs)
    return rows


def pair_scores(
    run: Mapping[str, Mapping[str, float]],
    changed_docs: Mapping[str, list[str]],
    *,
    depth: int | None = None,
    score_precision: str = "float32",
) -> dict[str, float]:
    """pair -> mean rank change of its changed documents, in pair-id order (pairs with no changed document,
    or whose og or changed ranking is absent from the run, are left out, as mteb leaves them out)."""
    rows = _rows(run, changed_docs, depth, score_precision)
    return pandas_means(rows)[0] if rows else {}


def p_mrr(
    run: Mapping[str, Mapping[str, float]],
    changed_docs: Mapping[str, list[str]],
    *,
    depth: int | None = None,
    score_precision: str = "float32",
) -> float:
    """The mean of `pair_scores` over pairs (0.0 when no pair can be scored)."""
    rows = _rows(run, changed_docs, depth, score_precision)
    return pandas_means(rows)[1] if rows else 0.0


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

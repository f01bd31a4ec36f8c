"""Readers for the release's tables, each returning plain dicts keyed by string ids.

Subset tables come from the subset's configs; provenance tables are split by domain and hold the
queries of all six languages, so the readers take the query ids a caller wants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..base.data import Gains, Qrels
from ..base.errors import DataError
from .rcp_release import Release


@dataclass
class JudgedQrels:
    """`qrels`: human grades > 0; `gains`: every row with a gain (the judged pool, plus human
    positives outside it at gain 0); `thetas`: the calibrated ability of each judged row."""

    qrels: Qrels
    gains: Gains
    thetas: dict[str, dict[str, float]]


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def read_qrels(release: Release, subset: str) -> JudgedQrels:
    relpath = f"{subset}-qrels"
    cols = release.subset_table(subset, "qrels", ("query-id", "corpus-id", "score", "gain", "theta"))
    qrels: Qrels = {}
    gains: Gains = {}
    thetas: dict[str, dict[str, float]] = {}
    for row, (qid, doc, score, gain, theta) in enumerate(
        zip(cols["query-id"], cols["corpus-id"], cols["score"], cols["gain"], cols["theta"]), start=1
    ):
        qid, doc = str(qid), str(doc)
        if score is not None and score > 0:
            qrels.setdefault(qid, {})[doc] = int(score)
        if not _is_missing(gain):
            if not (math.isfinite(gain) and gain >= 0):
                raise DataError(
                    f"{release.label}/{relpath}: row {row} has gain {gain!r}",
                    "gains must be finite and >= 0; pick another revision",
                )
            gains.setdefault(qid, {})[doc] = float(gain)
        if not _is_missing(theta):
            thetas.setdefault(qid, {})[doc] = float(theta)
    return JudgedQrels(qrels, gains, thetas)


def read_pools(release: Release, subset: str) -> dict[str, list[str]]:
    cols = release.subset_table(subset, "top_ranked", ("query-id", "corpus-ids"))
    return {str(q): [str(d) for d in ids] for q, ids in zip(cols["query-id"], cols["corpus-ids"])}


def read_query_ids(release: Release, subset: str) -> list[str]:
    return [str(q) for q in release.subset_table(subset, "queries", ("id",))["id"]]


def read_runs(release: Release, domain: str) -> dict[str, dict[str, dict[str, float]]]:
    """model -> qid -> page -> score of the stored reranker runs; judge strategies and NaN scores dropped."""
    cols = release.provenance("provenance-runs", domain, ("model", "query-id", "corpus-id", "score"))
    assert cols is not None
    judge = cols.get("is_judge") or [False] * len(cols["model"])
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for model, is_judge, qid, doc, score in zip(
        cols["model"], judge, cols["query-id"], cols["corpus-id"], cols["score"]
    ):
        if is_judge or _is_missing(score):
            continue
        runs.setdefault(str(model), {}).setdefault(str(qid), {})[str(doc)] = float(score)
    return runs


def read_first_stage(
    release: Release, domain: str, query_ids: set[str]
) -> dict[str, dict[str, list[tuple[str, float]]]]:
    """retriever -> qid -> [(page, score)] in rank order (embed_v4, bm25, octen and rrf_fused), for the
    given queries of one domain's `provenance-first-stage`."""
    where = f"{release.label} provenance-first-stage/{domain}"
    cols = release.provenance("provenance-first-stage", domain, ("query-id", "retriever", "corpus-id", "rank", "score"))
    assert cols is not None
    rows: dict[str, dict[str, list[tuple[int, str, float]]]] = {}
    for qid, retriever, doc, rank, score in zip(
        cols["query-id"], cols["retriever"], cols["corpus-id"], cols["rank"], cols["score"]
    ):
        if str(qid) in query_ids:
            rows.setdefault(str(retriever), {}).setdefault(str(qid), []).append((int(rank), str(doc), float(score)))
    out: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for retriever, by_query in rows.items():
        out[retriever] = {}
        for qid, items in by_query.items():
            items.sort()
            ranks = [r for r, _, _ in items]
            if ranks != list(range(1, len(items) + 1)):
                raise DataError(
                    f"{where}: ranks of {retriever} for query {qid} are not 1..n",
                    "pick another revision of the release",
                )
            out[retriever][qid] = [(doc, score) for _, doc, score in items]
    return out


def read_injected(release: Release, domain: str, query_ids: set[str]) -> dict[str, set[str]] | None:
    """qid -> the pages the ground-truth rule injected into its judged pool (`provenance-pool`'s
    `gt_injected`), for the given queries; None when the release has no provenance-pool.

    `gt_injected` is a flag per pool row (`query-id`, `corpus-id`, `gt_injected`), or per query the
    list of injected page ids."""
    cols = release.provenance("provenance-pool", domain, ("query-id", "gt_injected"), optional=True)
    if cols is None:
        return None
    injected: dict[str, set[str]] = {}
    docs = cols.get("corpus-id")
    for row, (qid, flag) in enumerate(zip(cols["query-id"], cols["gt_injected"])):
        qid = str(qid)
        if qid not in query_ids:
            continue
        pages = injected.setdefault(qid, set())
        if isinstance(flag, list):
            pages.update(str(d) for d in flag)
        elif docs is None:
            raise DataError(
                f"{release.label} provenance-pool/{domain}: gt_injected is a flag but there is no corpus-id column",
                "pick another revision of the release",
            )
        elif flag:
            pages.add(str(docs[row]))
    return injected

"""Readers for the release's tables, each returning plain dicts keyed by string ids."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..data import Gains, Qrels
from ..errors import DataError
from .release import Release


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
    relpath = f"{subset}/qrels.parquet"
    cols = release.table(relpath, ("query-id", "corpus-id", "score", "gain", "theta"))
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
    cols = release.table(f"{subset}/top_ranked.parquet", ("query-id", "corpus-ids"))
    return {str(q): [str(d) for d in ids] for q, ids in zip(cols["query-id"], cols["corpus-ids"])}


def read_runs(release: Release, domain: str) -> dict[str, dict[str, dict[str, float]]]:
    """model -> qid -> page -> score of the stored reranker runs; judge strategies and NaN scores dropped."""
    cols = release.table(f"provenance/runs/{domain}.parquet", ("model", "query-id", "corpus-id", "score"))
    judge = cols.get("is_judge") or [False] * len(cols["model"])
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for model, is_judge, qid, doc, score in zip(
        cols["model"], judge, cols["query-id"], cols["corpus-id"], cols["score"]
    ):
        if is_judge or _is_missing(score):
            continue
        runs.setdefault(str(model), {}).setdefault(str(qid), {})[str(doc)] = float(score)
    return runs


def read_first_stage(release: Release, subset: str) -> dict[str, dict[str, list[tuple[str, float]]]]:
    """retriever -> qid -> [(page, score)] in rank order (embed_v4, bm25, octen and rrf_fused)."""
    relpath = f"provenance/first_stage/{subset}.parquet"
    cols = release.table(relpath, ("query-id", "retriever", "corpus-id", "rank", "score"))
    rows: dict[str, dict[str, list[tuple[int, str, float]]]] = {}
    for qid, retriever, doc, rank, score in zip(
        cols["query-id"], cols["retriever"], cols["corpus-id"], cols["rank"], cols["score"]
    ):
        rows.setdefault(str(retriever), {}).setdefault(str(qid), []).append((int(rank), str(doc), float(score)))
    out: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for retriever, by_query in rows.items():
        out[retriever] = {}
        for qid, items in by_query.items():
            items.sort()
            ranks = [r for r, _, _ in items]
            if ranks != list(range(1, len(items) + 1)):
                raise DataError(
                    f"{release.label}/{relpath}: ranks of {retriever} for query {qid} are not 1..n",
                    "pick another revision of the release",
                )
            out[retriever][qid] = [(doc, score) for _, doc, score in items]
    return out

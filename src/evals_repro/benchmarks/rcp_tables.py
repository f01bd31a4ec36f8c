"""Readers for the release's tables, each returning plain dicts keyed by string ids.

Subset tables come from the subset's configs; provenance tables are split by domain and hold the
queries of all six languages, so the readers take the query ids a caller wants.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

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


def run_groups(release: Release, domain: str) -> Iterator[tuple[str, str, dict[str, float]]]:
    """(model, qid, {page: score}) of one domain's stored reranker runs, one model and query at a time; judge
    strategies and NaN scores dropped, a repeated page keeps its last row.

    Streaming: the domain's rows are held as Arrow columns (ids as dictionary codes, scores as doubles) and grouped
    by a sort of the codes, so memory grows with the domain's rows at a few dozen bytes each, never a Python object
    per row; a group becomes Python only while it is scored."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = ("model", "query-id", "corpus-id", "score")
    tables = [release.arrow(f, columns, ("is_judge",)) for f in release.provenance_files("provenance-runs", domain)]
    tables = [
        t if "is_judge" in t.column_names else t.append_column("is_judge", pa.nulls(len(t), pa.bool_())) for t in tables
    ]
    table = pa.concat_tables([t.select([*columns, "is_judge"]) for t in tables], promote_options="permissive")
    score = pc.cast(table["score"], pa.float64())
    judge = pc.fill_null(pc.cast(table["is_judge"], pa.bool_()), False)
    keep = pc.fill_null(pc.and_(pc.invert(judge), pc.invert(pc.is_nan(score))), False)  # a null score: dropped too
    table = table.set_column(table.column_names.index("score"), "score", score).filter(keep)

    def codes(name: str) -> tuple[Any, list[str]]:
        encoded = pc.dictionary_encode(pc.cast(table[name], pa.string())).combine_chunks()
        return encoded.indices.to_numpy(zero_copy_only=False), [str(v) for v in encoded.dictionary.to_pylist()]

    model_codes, models = codes("model")
    query_codes, queries = codes("query-id")
    doc_codes, docs = codes("corpus-id")
    scores = table["score"].to_numpy()
    table = None  # the codes and scores hold what is left to read
    key = model_codes.astype(np.int64) * max(1, len(queries)) + query_codes  # one sort key: model, then query
    order = np.argsort(key, kind="stable")  # stable: a repeated page keeps its last row
    key = key[order]
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1]))) if len(key) else np.array([], np.int64)
    ends = np.append(starts[1:], len(key))
    for start, end in zip(starts.tolist(), ends.tolist()):
        rows = order[start:end]
        first = rows[0]
        pages = [docs[i] for i in doc_codes[rows].tolist()]
        yield models[model_codes[first]], queries[query_codes[first]], dict(zip(pages, scores[rows].tolist()))


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
    cols = release.provenance(
        "provenance-pool", domain, ("query-id", "gt_injected"), optional=True, also=("corpus-id",)
    )
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

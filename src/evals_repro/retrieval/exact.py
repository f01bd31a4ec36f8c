"""Exact inner-product top-k over float32 embeddings, in bounded memory, ties broken like trec_eval.

Rows are expected unit-norm (the embedders return them so), which makes the inner product the
cosine. The corpus matrix is used in place (never copied). Scores are computed one
(query block x corpus block) tile at a time with a BLAS float32 matmul into a reused buffer; a
numba kernel (`exact_kernels`) then scans each tile row once, keeping per query a heap of its k
best documents so far by exact score. A float32 score only gets a second look when it is within
the float32 error bound of the heap's worst entry (a few hundred per query over a 100k corpus,
most of them early on); those are rescored in float64 in one fixed summation order and pushed
into the heap. So every reported score is the exact cosine (float64), the order is score
descending, then document id descending as a string (the trec_eval order), and duplicate pages
score identically wherever they sit in the corpus or the batch (BLAS's own float32 sums depend on
a row's position in the tile). Scratch memory (the tile and the heaps) stays within
`memory_budget` bytes (default: 1/16 of the corpus bytes, at least 8 MiB).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..base.errors import UsageError

_TILE_BYTES_PER_ELEMENT = 4  # float32 scores
_HEAP_BYTES_PER_ENTRY = 24  # float64 score, int64 id rank, int64 row
_BAND_BYTES_PER_ENTRY = 12  # float32 score, int64 row


@functools.cache
def _blas_controller():
    """The process's BLAS thread pools (found once: numpy's BLAS is loaded with numpy)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _spans(n: int, parts: int) -> list[tuple[int, int]]:
    """Split range(n) into up to `parts` contiguous (start, stop) spans of near-equal size."""
    bounds = np.linspace(0, n, max(1, min(parts, n)) + 1).astype(np.int64)
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


def _band_capacity(k: int) -> int:
    """Room per query for float32 near-ties of the k-th score (overflowing it only costs time)."""
    return max(64, k)


def id_ranks(ids: Sequence[str]) -> np.ndarray:
    """id_rank[i] = position of ids[i] in ascending string order: the tie-breaker."""
    order = sorted(range(len(ids)), key=ids.__getitem__)
    ranks = np.empty(len(ids), dtype=np.int64)
    ranks[order] = np.arange(len(ids), dtype=np.int64)
    return ranks


def error_scale(dimension: int) -> float:
    """|float32 BLAS score - exact score| <= this * |q| * max|c| (gamma_d, doubled for safety)."""
    return 2.0 * dimension * 2.0**-24


def search_outputs(
    queries: np.ndarray, top_k: int, dimension: int, n_rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Checked float32 queries and the (n_queries, min(top_k, n_rows)) index and score arrays a search fills;
    a bad top_k or query shape is one UsageError naming the fix."""
    if top_k < 1:
        raise UsageError(f"top_k must be at least 1, got {top_k}", "pass --top-k 100")
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    if queries.ndim != 2 or queries.shape[1] != dimension:
        raise UsageError(
            f"query matrix has shape {queries.shape}, the index has dimension {dimension}",
            "embed queries with the same model and dimension as the corpus",
        )
    k = min(top_k, n_rows)
    return queries, np.empty((queries.shape[0], k), dtype=np.int64), np.empty((queries.shape[0], k), dtype=np.float64)


# BLAS runs far slower on narrow tiles (1.5 s vs 2.8 s at 1000 x 4096 vs 1000 x 1700, d=1024).
_MIN_CORPUS_BLOCK = 4096
_MIN_BUDGET = 8 << 20
_MAX_QUERY_BLOCK = 1024
# Query groups searched in parallel (the kernels release the GIL), and threads for the norm pass.
_THREADS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


class ExactIndex:
    """Exact top-k search over `embeddings` (n, d) float32 whose rows belong to `ids`."""

    def __init__(self, embeddings: np.ndarray, ids: Sequence[str], memory_budget: int | None = None):
        if embeddings.ndim != 2:
            raise UsageError(
                f"ExactIndex needs a 2-d matrix, got shape {embeddings.shape}", "pass one embedding row per document"
            )
        if len(ids) != embeddings.shape[0]:
            raise UsageError(
                f"ExactIndex got {embeddings.shape[0]} rows but {len(ids)} ids", "pass one id per embedding row"
            )
        # No copy when the caller already holds C-contiguous float32 (the normal case).
        self.embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
        self.ids = list(ids)
        self.memory_budget = (
            memory_budget if memory_budget is not None else max(_MIN_BUDGET, self.embeddings.nbytes // 16)
        )
        from . import exact_kernels

        with ThreadPoolExecutor(_THREADS) as pool:
            # The largest row norm (1.0 for unit rows, kept for the float32 error bound) is read
            # by threads outside the GIL while this one sorts the ids.
            norms = [
                pool.submit(exact_kernels.max_square_norm, self.embeddings, start, stop)
                for start, stop in _spans(len(self), _THREADS)
            ]
            self.id_rank = id_ranks(self.ids)
            self.max_norm = float(np.sqrt(max(norm.result() for norm in norms))) * 1.0001

    @property
    def dimension(self) -> int:
        return self.embeddings.shape[1]

    def __len__(self) -> int:
        return self.embeddings.shape[0]

    def _blocks(self, n_queries: int, k: int, budget: int) -> tuple[int, int]:
        """(queries, corpus rows) per tile: the tile plus the heaps fit `budget`, the tile as wide
        as possible up to the whole corpus but at least _MIN_CORPUS_BLOCK when it can be."""
        per_query_heap = k * _HEAP_BYTES_PER_ENTRY + _band_capacity(k) * _BAND_BYTES_PER_ENTRY
        wide = min(len(self), _MIN_CORPUS_BLOCK)
        query_block = max(
            1, min(n_queries, _MAX_QUERY_BLOCK, budget // (wide * _TILE_BYTES_PER_ELEMENT + per_query_heap))
        )
        room = budget - query_block * per_query_heap
        corpus_block = max(1, min(len(self), room // (query_block * _TILE_BYTES_PER_ELEMENT)))
        return query_block, corpus_block

    def search(self, queries: np.ndarray, top_k: int) -> tuple[np.ndarray, np.ndarray]:
        """Return (row indices, float64 exact scores), each (n_queries, min(top_k, n)), best first.

        With several CPUs the queries are split into one group per CPU, each searched by its own
        thread with single-threaded BLAS: matmul and scan then alternate on every core without
        BLAS threads waiting at barriers or spinning while the scan runs (~10% faster than one
        2-thread BLAS pipeline on 2 cores). BLAS is limited to one thread during the call."""
        queries, indices, scores = search_outputs(queries, top_k, self.dimension, len(self))
        m, k = indices.shape
        if m == 0 or k == 0:
            return indices, scores
        groups = _spans(m, _THREADS)
        if len(groups) == 1:
            self._search_group(queries, k, indices, scores, self.memory_budget)
            return indices, scores
        budget = self.memory_budget // len(groups)
        with _blas_controller().limit(limits=1, user_api="blas"), ThreadPoolExecutor(len(groups)) as pool:
            runs = [
                pool.submit(self._search_group, queries[q0:q1], k, indices[q0:q1], scores[q0:q1], budget)
                for q0, q1 in groups
            ]
            for run in runs:
                run.result()
        return indices, scores

    def _search_group(self, queries: np.ndarray, k: int, indices: np.ndarray, scores: np.ndarray, budget: int):
        """Search `queries` into `indices`/`scores` in tiles within `budget` bytes, on this thread."""
        from . import exact_kernels

        query_block, corpus_block = self._blocks(len(queries), k, budget)
        tile = np.empty(query_block * corpus_block, dtype=np.float32)
        band = _band_capacity(k)
        state = (
            np.empty((query_block, k), dtype=np.float64),
            np.empty((query_block, k), dtype=np.int64),
            np.empty((query_block, k), dtype=np.int64),
            np.empty((query_block, band), dtype=np.float32),
            np.empty((query_block, band), dtype=np.int64),
            np.zeros((query_block, 3), dtype=np.int64),
        )
        for q0 in range(0, len(queries), query_block):
            block = queries[q0 : q0 + query_block]
            qb = block.shape[0]
            error = error_scale(self.dimension) * np.linalg.norm(block, axis=1).astype(np.float64) * self.max_norm
            for c0 in range(0, len(self), corpus_block):
                c1 = min(len(self), c0 + corpus_block)
                scored = tile[: qb * (c1 - c0)].reshape(qb, c1 - c0)
                np.matmul(block, self.embeddings[c0:c1].T, out=scored)
                exact_kernels.scan_tile(scored, c0, block, self.embeddings, self.id_rank, error, state, 0, qb)
            exact_kernels.finish(
                block, self.embeddings, self.id_rank, error, state, indices[q0 : q0 + qb], scores[q0 : q0 + qb], 0, qb
            )

    def search_ids(self, queries: np.ndarray, top_k: int) -> list[list[tuple[str, float]]]:
        """Like `search`, with document ids and Python floats, best first."""
        indices, scores = self.search(queries, top_k)
        return [
            [(self.ids[i], float(s)) for i, s in zip(row_i, row_s)]
            for row_i, row_s in zip(indices.tolist(), scores.tolist())
        ]

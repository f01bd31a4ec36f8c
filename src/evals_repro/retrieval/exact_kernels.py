"""Numba kernels behind ExactIndex: scan a float32 score tile, rescore the few scores that could
enter a query's top k in float64, and keep them in a bounded heap per query.

Imported lazily (numba takes a while to import). Compiled once and cached on disk (`cache=True`);
every kernel releases the GIL so the caller can split a tile's rows across threads.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def dot64(query, row):
    """Float64 inner product of two float32 vectors (each product is exact in float64), summed in
    one fixed order (eight running sums, then a fixed tree) whatever the vectors' position or
    alignment: without fastmath LLVM may not reassociate, so identical vectors score identically."""
    d = query.shape[0]
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    j = 0
    while j + 8 <= d:
        a0 += np.float64(query[j]) * np.float64(row[j])
        a1 += np.float64(query[j + 1]) * np.float64(row[j + 1])
        a2 += np.float64(query[j + 2]) * np.float64(row[j + 2])
        a3 += np.float64(query[j + 3]) * np.float64(row[j + 3])
        a4 += np.float64(query[j + 4]) * np.float64(row[j + 4])
        a5 += np.float64(query[j + 5]) * np.float64(row[j + 5])
        a6 += np.float64(query[j + 6]) * np.float64(row[j + 6])
        a7 += np.float64(query[j + 7]) * np.float64(row[j + 7])
        j += 8
    while j < d:
        a0 += np.float64(query[j]) * np.float64(row[j])
        j += 1
    return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))


@numba.njit(cache=True, nogil=True, inline="always")
def _worse(value_a, rank_a, value_b, rank_b):
    """Does (value_a, rank_a) rank below (value_b, rank_b)? Score descending, then id descending."""
    return value_a < value_b or (value_a == value_b and rank_a < rank_b)


@numba.njit(cache=True, nogil=True)
def _sift_down(values, ranks, cols, size, at):
    """Restore the min-heap (the worst kept entry at the root) below position `at`."""
    while True:
        child = 2 * at + 1
        if child >= size:
            return
        if child + 1 < size and _worse(values[child + 1], ranks[child + 1], values[child], ranks[child]):
            child += 1
        if not _worse(values[child], ranks[child], values[at], ranks[at]):
            return
        values[at], values[child] = values[child], values[at]
        ranks[at], ranks[child] = ranks[child], ranks[at]
        cols[at], cols[child] = cols[child], cols[at]
        at = child


@numba.njit(cache=True, nogil=True)
def _sift_up(values, ranks, cols, at):
    while at > 0:
        parent = (at - 1) // 2
        if not _worse(values[at], ranks[at], values[parent], ranks[parent]):
            return
        values[at], values[parent] = values[parent], values[at]
        ranks[at], ranks[parent] = ranks[parent], ranks[at]
        cols[at], cols[parent] = cols[parent], cols[at]
        at = parent


@numba.njit(cache=True, nogil=True)
def _float32_floor(value):
    """The largest float32 not above `value` (a float64), so a float32 comparison never drops a candidate."""
    rounded = np.float32(value)
    if np.float64(rounded) > value:
        rounded = np.nextafter(rounded, np.float32(-np.inf))
    return rounded


@numba.njit(cache=True, nogil=True)
def scan_tile(tile, c0, block, corpus, id_rank, error, heap_values, heap_ranks, heap_cols, heap_sizes, r0, r1):
    """Fold the scores tile[r, :] (queries block[r] against corpus rows c0...) into each query's heap,
    for rows r0 <= r < r1.

    Each heap keeps the k best (exact score, id rank) pairs seen so far, the worst at its root. A
    float32 score s can only beat the root if s >= root - error[r] (error bounds |s - exact score|),
    so only those few are rescored in float64; the rest of the tile is one comparison each.
    """
    k = heap_values.shape[1]
    width = tile.shape[1]
    for r in range(r0, r1):
        query = block[r]
        values, ranks, cols = heap_values[r], heap_ranks[r], heap_cols[r]
        size = heap_sizes[r]
        cut = _float32_floor(values[0] - error[r]) if size == k else np.float32(-np.inf)
        scores = tile[r]
        for j in range(width):
            if scores[j] >= cut:
                col = c0 + j
                value = dot64(query, corpus[col])
                rank = id_rank[col]
                if size < k:
                    values[size], ranks[size], cols[size] = value, rank, col
                    _sift_up(values, ranks, cols, size)
                    size += 1
                elif _worse(values[0], ranks[0], value, rank):
                    values[0], ranks[0], cols[0] = value, rank, col
                    _sift_down(values, ranks, cols, size, 0)
                else:
                    continue
                if size == k:
                    cut = _float32_floor(values[0] - error[r])
        heap_sizes[r] = size


@numba.njit(cache=True, nogil=True)
def drain(heap_values, heap_ranks, heap_cols, heap_sizes, out_cols, out_values):
    """Empty each full heap into out[r] best first (score descending, then id descending)."""
    for r in range(heap_values.shape[0]):
        values, ranks, cols = heap_values[r], heap_ranks[r], heap_cols[r]
        size = heap_sizes[r]
        while size > 0:
            size -= 1
            out_cols[r, size], out_values[r, size] = cols[0], values[0]
            values[0], ranks[0], cols[0] = values[size], ranks[size], cols[size]
            _sift_down(values, ranks, cols, size, 0)
        heap_sizes[r] = 0

"""Numba kernels behind ExactIndex: scan a float32 score tile, rescore the few scores that could
enter a query's top k in float64, and keep them in a bounded heap per query.

Imported lazily (numba takes a while to import). Compiled once and cached on disk (`cache=True`);
every kernel releases the GIL so the caller can split a tile's rows across threads.
"""

from __future__ import annotations

import numba
import numpy as np


# reassoc lets LLVM vectorise the float64 sum (4-8x faster); contract lets it fuse multiply-adds.
@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def dot64(query, row):
    """Float64 inner product of two float32 vectors (each product is exact in float64).

    The summation order is whatever this one compiled loop does for length d: vector lanes, then a
    fixed reduction, with unaligned loads (no peeling on the data's address). So identical vectors
    score identically wherever they sit in memory (tests check it on misaligned rows)."""
    total = 0.0
    for j in range(query.shape[0]):
        total += np.float64(query[j]) * np.float64(row[j])
    return total


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


_CHUNK = 32  # scores tested together with one vectorised comparison


@numba.njit(cache=True, nogil=True)
def _admit(query, row, col, rank, values, ranks, cols, size, k):
    """Rescore one candidate and push it into the heap if it ranks above the worst kept; new size."""
    value = dot64(query, row)
    if size < k:
        values[size], ranks[size], cols[size] = value, rank, col
        _sift_up(values, ranks, cols, size)
        return size + 1
    if _worse(values[0], ranks[0], value, rank):
        values[0], ranks[0], cols[0] = value, rank, col
        _sift_down(values, ranks, cols, size, 0)
    return size


@numba.njit(cache=True, nogil=True)
def _kth_largest(scores, values, ranks, cols, k):
    """The k-th largest of `scores` (k <= its length), using the (empty) heap arrays as scratch."""
    for j in range(k):
        values[j], ranks[j], cols[j] = scores[j], 0, 0
        _sift_up(values, ranks, cols, j)
    least = np.float32(values[0])
    for start in range(k, scores.shape[0], _CHUNK):
        stop = min(scores.shape[0], start + _CHUNK)
        hit = False
        for j in range(start, stop):
            hit |= scores[j] > least
        if hit:
            for j in range(start, stop):
                if scores[j] > least:
                    values[0] = scores[j]
                    _sift_down(values, ranks, cols, k, 0)
                    least = np.float32(values[0])
    return values[0]


@numba.njit(cache=True, nogil=True)
def scan_tile(tile, c0, block, corpus, id_rank, error, heap_values, heap_ranks, heap_cols, heap_sizes, r0, r1):
    """Fold the scores tile[r, :] (queries block[r] against corpus rows c0...) into each query's heap,
    for rows r0 <= r < r1.

    Each heap keeps the k best (exact score, id rank) pairs seen so far, the worst at its root. A
    float32 score s can only beat the root if s >= root - error[r] (error bounds |s - exact score|),
    so only those few are rescored in float64; the rest of the tile costs one comparison each. An
    empty heap is seeded from the tile's own k-th best float32 score t: k documents score at least
    t - error exactly, so a score below t - 2 error cannot reach the final top k.
    """
    k = heap_values.shape[1]
    width = tile.shape[1]
    for r in range(r0, r1):
        query = block[r]
        values, ranks, cols = heap_values[r], heap_ranks[r], heap_cols[r]
        size = heap_sizes[r]
        scores = tile[r]
        if size == k:
            cut = _float32_floor(values[0] - error[r])
        elif size == 0 and width > k:
            cut = _float32_floor(_kth_largest(scores, values, ranks, cols, k) - 2.0 * error[r])
        else:
            cut = np.float32(-np.inf)
        for start in range(0, width, _CHUNK):
            stop = min(width, start + _CHUNK)
            hit = False
            for j in range(start, stop):
                hit |= scores[j] >= cut
            if not hit:
                continue
            for j in range(start, stop):
                if scores[j] >= cut:
                    col = c0 + j
                    size = _admit(query, corpus[col], col, id_rank[col], values, ranks, cols, size, k)
                    if size == k:
                        cut = max(cut, _float32_floor(values[0] - error[r]))
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

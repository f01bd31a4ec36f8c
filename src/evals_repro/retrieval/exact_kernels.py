"""Numba kernels behind ExactIndex: scan a float32 score tile, rescore the few scores that could
enter a query's top k in float64, and keep them in a bounded heap per query.

Imported lazily (numba takes a while to import). Compiled once and cached on disk (`cache=True`);
every kernel releases the GIL so the caller can split a tile's rows across threads.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

_CHUNK = 64  # scores tested together with one vectorised comparison
_SEED_CHUNK = 32  # chunk width whose k-th largest maximum seeds a fresh heap's cut


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


@intrinsic
def _prefetch_at(typingctx, array, index):
    """Hint the CPU to start loading the cache line of array[index] (1-d array, no bounds check)."""

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, signature.args[0], ary, [args[1]])
        prefetch = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(
                ir.VoidType(), [ir.IntType(8).as_pointer(), ir.IntType(32), ir.IntType(32), ir.IntType(32)]
            ),
            "llvm.prefetch.p0i8",
        )
        read, keep, data = (ir.Constant(ir.IntType(32), value) for value in (0, 3, 1))
        builder.call(prefetch, [builder.bitcast(pointer, ir.IntType(8).as_pointer()), read, keep, data])
        return context.get_dummy_value()

    if isinstance(array, types.Array) and array.ndim == 1 and isinstance(index, types.Integer):
        return types.none(array, index), codegen
    return None


@numba.njit(cache=True, nogil=True, inline="always")
def _prefetch_row(row):
    """Start loading every cache line of `row` (a float32 vector), so a later dot64 over it
    does not wait on memory one line at a time (candidate rows sit at random places)."""
    for j in range(0, row.shape[0], 16):
        _prefetch_at(row, j)


@numba.njit(cache=True, nogil=True)
def max_square_norm(rows, start, stop):
    """Largest squared norm among rows[start:stop], in float64."""
    largest = 0.0
    for i in range(start, stop):
        largest = max(largest, dot64(rows[i], rows[i]))
    return largest


@numba.njit(cache=True, nogil=True, inline="always")
def _worse(value_a, rank_a, value_b, rank_b):
    """Does (value_a, rank_a) rank below (value_b, rank_b)? Score descending, then id descending."""
    return value_a < value_b or (value_a == value_b and rank_a < rank_b)


@numba.njit(cache=True, nogil=True, inline="always")
def _swap(values, ranks, cols, i, j):
    """Swap two heap entries (score, rank, column travel together)."""
    values[i], values[j] = values[j], values[i]
    ranks[i], ranks[j] = ranks[j], ranks[i]
    cols[i], cols[j] = cols[j], cols[i]


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
        _swap(values, ranks, cols, at, child)
        at = child


@numba.njit(cache=True, nogil=True)
def _sift_up(values, ranks, cols, at):
    while at > 0:
        parent = (at - 1) // 2
        if not _worse(values[at], ranks[at], values[parent], ranks[parent]):
            return
        _swap(values, ranks, cols, at, parent)
        at = parent


@numba.njit(cache=True, nogil=True)
def _float32_floor(value):
    """The largest float32 not above `value` (a float64), so a float32 comparison never drops a candidate."""
    rounded = np.float32(value)
    if np.float64(rounded) > value:
        rounded = np.nextafter(rounded, np.float32(-np.inf))
    return rounded


@numba.njit(cache=True, nogil=True, inline="always")
def _admit(value, col, rank, values, ranks, cols, size, k):
    """Push (value, rank, col) if the heap has room or it ranks above the root; returns
    (new size, evicted value, evicted col), the evicted col -1 when nothing left the heap."""
    if size < k:
        values[size], ranks[size], cols[size] = value, rank, col
        _sift_up(values, ranks, cols, size)
        return size + 1, 0.0, -1
    if _worse(values[0], ranks[0], value, rank):
        evicted_value, evicted_col = values[0], cols[0]
        values[0], ranks[0], cols[0] = value, rank, col
        _sift_down(values, ranks, cols, size, 0)
        return size, evicted_value, evicted_col
    return size, value, col


@numba.njit(cache=True, nogil=True, fastmath=True)
def _chunk_max(scores, start, stop):
    window = scores[start:stop]  # indexed from 0, so LLVM vectorises the max with plain loads
    largest = window[0]
    for j in range(1, window.shape[0]):
        largest = max(largest, window[j])
    return largest


# A fixed-width integer count over a window indexed from 0 compiles to a few vector compares and
# one horizontal add (~0.12 ns a score against ~1 ns for the scalar `hit |= ...` loop it replaces).
@numba.njit(cache=True, nogil=True, inline="always")
def _reaches(scores, chunk, stop, cut):
    """Does any of scores[chunk:stop] reach `cut`? A full chunk (stop = chunk + _CHUNK) is one
    branch-free vector pass."""
    if stop - chunk == _CHUNK:
        window = scores[chunk:stop]  # indices from 0: LLVM sees unit-stride loads, not gathers
        count = np.int32(0)
        for j in range(_CHUNK):
            count += np.int32(window[j] >= cut)
        return count > 0
    for j in range(chunk, stop):
        if scores[j] >= cut:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def _kth_chunk_max(scores, k):
    """The k-th largest of the maxima of the _SEED_CHUNK-wide chunks of `scores` (there must be k
    chunks): k scores reach it, so it bounds the k-th best score from below."""
    width = scores.shape[0]
    chunks = (width + _SEED_CHUNK - 1) // _SEED_CHUNK
    maxima = np.empty(chunks, dtype=np.float32)
    for i in range(chunks):
        maxima[i] = _chunk_max(scores, i * _SEED_CHUNK, min(width, (i + 1) * _SEED_CHUNK))
    return np.float64(np.partition(maxima, chunks - k)[chunks - k])


@numba.njit(cache=True, nogil=True)
def _scan_exact(scores, start, c0, query, corpus, base, id_rank, error, values, ranks, cols, size, k):
    """Exact mode: rescore every score within `error` of the root (an exact score) and push it.
    Document row `col` is corpus[col - base] (base 0: the whole corpus; else a block of it).

    An empty heap starts from the k-th largest chunk maximum t instead of admitting everything:
    k documents score at least t - error exactly, so the k-th best does too, and a score below
    t - 2 error (exact value below t - error) cannot make the top k."""
    width = scores.shape[0]
    if size == k:
        cut = _float32_floor(values[0] - error)
    elif size == 0 and start == 0 and (width + _SEED_CHUNK - 1) // _SEED_CHUNK >= k:
        cut = _float32_floor(_kth_chunk_max(scores, k) - 2.0 * error)
    else:
        cut = np.float32(-np.inf)
    for chunk in range(start, width, _CHUNK):
        stop = min(width, chunk + _CHUNK)
        if not _reaches(scores, chunk, stop, cut):
            continue
        for j in range(max(chunk, start), stop):
            if scores[j] >= cut:
                col = c0 + j
                size, _, _ = _admit(dot64(query, corpus[col - base]), col, id_rank[col], values, ranks, cols, size, k)
                if size == k:
                    cut = max(cut, _float32_floor(values[0] - error))
    return size


@numba.njit(cache=True, nogil=True)
def _scan_approximate(scores, c0, id_rank, margin, values, ranks, cols, size, band_values, band_cols, band_size, k):
    """Float32 mode: keep the k best float32 scores in the heap and, in the band, every other score
    within `margin` (twice the error bound) of the root: only those can still make the exact top k.
    Returns (heap size, band size, where it stopped): before `width` when the band overflowed."""
    width = scores.shape[0]
    capacity = band_values.shape[0]
    if size == k:
        cut = _float32_floor(values[0] - margin)
    elif size == 0 and (width + _SEED_CHUNK - 1) // _SEED_CHUNK >= k:
        # A fresh heap: skip the hundreds of pushes a rising cut would cost on the first tile.
        cut = _float32_floor(_kth_chunk_max(scores, k) - margin)
    else:
        cut = np.float32(-np.inf)
    for chunk in range(0, width, _CHUNK):
        stop = min(width, chunk + _CHUNK)
        if not _reaches(scores, chunk, stop, cut):
            continue
        for j in range(chunk, stop):
            if scores[j] < cut:
                continue
            if band_size == capacity:  # drop the entries the rising cut has left behind
                kept = 0
                for i in range(band_size):
                    if band_values[i] >= cut:
                        band_values[kept], band_cols[kept] = band_values[i], band_cols[i]
                        kept += 1
                band_size = kept
                if band_size == capacity:
                    return size, band_size, j  # crowded: the caller goes exact from column j
            col = c0 + j
            size, out_value, out_col = _admit(np.float64(scores[j]), col, id_rank[col], values, ranks, cols, size, k)
            if size < k:
                continue
            cut = max(cut, _float32_floor(values[0] - margin))
            if out_col >= 0 and np.float32(out_value) >= cut:
                band_values[band_size], band_cols[band_size] = out_value, out_col
                band_size += 1
    return size, band_size, width


@numba.njit(cache=True, nogil=True)
def _to_exact(query, corpus, id_rank, margin, values, ranks, cols, size, band_values, band_cols, band_size, k):
    """Rescore the float32 heap in float64 and push the band's live entries: the exact heap."""
    cut = _float32_floor(values[0] - margin) if size == k else np.float32(-np.inf)
    if size > 0:
        _prefetch_row(corpus[cols[0]])
    for i in range(size):
        if i + 1 < size:
            _prefetch_row(corpus[cols[i + 1]])
        elif band_size > 0:
            _prefetch_row(corpus[band_cols[0]])
        values[i] = dot64(query, corpus[cols[i]])
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(values, ranks, cols, size, i)
    for i in range(band_size):
        if i + 1 < band_size and band_values[i + 1] >= cut:
            _prefetch_row(corpus[band_cols[i + 1]])
        if band_values[i] >= cut:
            col = band_cols[i]
            size, _, _ = _admit(dot64(query, corpus[col]), col, id_rank[col], values, ranks, cols, size, k)
    return size


@numba.njit(cache=True, nogil=True)
def scan_tile(tile, c0, block, corpus, id_rank, error, state, r0, r1):
    """Fold the scores tile[r, :] (queries block[r] against corpus rows c0...) into each query's
    state, for rows r0 <= r < r1. `state` = (heap values, ranks, cols, band values, band cols,
    sizes), sizes[r] = (heap size, band size, exact mode).

    A query starts in float32 mode: a heap of its k best float32 scores plus a band of the
    scores within 2 error of the heap's worst (error bounds |float32 - exact|, so nothing below
    that can reach the exact top k); at the end only those ~k candidates are rescored in float64.
    If the band overflows (a mass of near-ties), the query goes exact: its candidates are rescored
    now and from then on each score within error of the exact k-th is rescored as it comes.
    """
    values_all, ranks_all, cols_all, band_values_all, band_cols_all, sizes = state
    k = values_all.shape[1]
    for r in range(r0, r1):
        values, ranks, cols = values_all[r], ranks_all[r], cols_all[r]
        size, band_size, exact = sizes[r, 0], sizes[r, 1], sizes[r, 2]
        start = 0
        if not exact:
            size, band_size, start = _scan_approximate(
                tile[r],
                c0,
                id_rank,
                2.0 * error[r],
                values,
                ranks,
                cols,
                size,
                band_values_all[r],
                band_cols_all[r],
                band_size,
                k,
            )
            if start < tile.shape[1]:
                size = _to_exact(
                    block[r],
                    corpus,
                    id_rank,
                    2.0 * error[r],
                    values,
                    ranks,
                    cols,
                    size,
                    band_values_all[r],
                    band_cols_all[r],
                    band_size,
                    k,
                )
                band_size, exact = 0, 1
        if exact:
            size = _scan_exact(tile[r], start, c0, block[r], corpus, 0, id_rank, error[r], values, ranks, cols, size, k)
        sizes[r, 0], sizes[r, 1], sizes[r, 2] = size, band_size, exact


@numba.njit(cache=True, nogil=True)
def scan_block(tile, c0, block, rows, id_rank, error, values_all, ranks_all, cols_all, sizes, q0):
    """Streamed search: fold tile[r, j], the float32 score of query block[r] against rows[j]
    (document row c0 + j, a block of the corpus read from disk), into the exact heap of query
    q0 + r. Exact mode from the start: a score within error[r] of the heap's worst is rescored
    in float64 now, while its row is in memory (earlier blocks are gone by the end). A query
    sees ~k(1 + ln(n / k)) such rescorings over n rows, small beside the tile's matmul."""
    k = values_all.shape[1]
    for r in range(tile.shape[0]):
        q = q0 + r
        sizes[q] = _scan_exact(
            tile[r], 0, c0, block[r], rows, c0, id_rank, error[r], values_all[q], ranks_all[q], cols_all[q], sizes[q], k
        )


@numba.njit(cache=True, nogil=True)
def drain(values_all, ranks_all, cols_all, sizes, out_cols, out_values):
    """Empty each exact heap into out[q] best first (score descending, then id descending)."""
    for q in range(values_all.shape[0]):
        values, ranks, cols = values_all[q], ranks_all[q], cols_all[q]
        size = sizes[q]
        while size > 0:
            size -= 1
            out_cols[q, size], out_values[q, size] = cols[0], values[0]
            values[0], ranks[0], cols[0] = values[size], ranks[size], cols[size]
            _sift_down(values, ranks, cols, size, 0)
        sizes[q] = 0


@numba.njit(cache=True, nogil=True)
def finish(block, corpus, id_rank, error, state, out_cols, out_values, r0, r1):
    """Make the heaps of rows r0 <= r < r1 exact, then empty each into out[r] best first (score
    descending, then id descending)."""
    values_all, ranks_all, cols_all, band_values_all, band_cols_all, sizes = state
    for r in range(r0, r1):
        values, ranks, cols = values_all[r], ranks_all[r], cols_all[r]
        size = sizes[r, 0]
        if not sizes[r, 2]:
            size = _to_exact(
                block[r],
                corpus,
                id_rank,
                2.0 * error[r],
                values,
                ranks,
                cols,
                size,
                band_values_all[r],
                band_cols_all[r],
                sizes[r, 1],
                values.shape[0],
            )
        while size > 0:
            size -= 1
            out_cols[r, size], out_values[r, size] = cols[0], values[0]
            values[0], ranks[0], cols[0] = values[size], ranks[size], cols[size]
            _sift_down(values, ranks, cols, size, 0)
        sizes[r, 0] = sizes[r, 1] = sizes[r, 2] = 0

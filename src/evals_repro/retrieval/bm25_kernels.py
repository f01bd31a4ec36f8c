"""Numba top-k over bm25s's CSC score matrix that touches only the documents a query's terms reach.

bm25s's own kernel allocates, zeroes and scans a float32 score for every document, for every query:
at MS MARCO's 8.8M passages that is ~70 MB of memory traffic per query, whatever the query. Here
each worker thread keeps one score array (and one "seen" mark per document) for all its queries,
records the documents a query touches, keeps the best k of those in a bounded heap and resets only
them. Scores are the same float32 additions in the same order as bm25s's (query terms in order,
each term's postings in index order), so they are bit-identical to bm25s's.

Imported lazily (numba takes a while to import); compiled once and cached on disk (`cache=True`).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _sift_down(values, docs, size, at):
    """Restore the min-heap (lowest score at the root) below position `at`."""
    while True:
        child = 2 * at + 1
        if child >= size:
            return
        if child + 1 < size and values[child + 1] < values[child]:
            child += 1
        if values[child] < values[at]:
            values[at], values[child] = values[child], values[at]
            docs[at], docs[child] = docs[child], docs[at]
            at = child
        else:
            return


@numba.njit(cache=True, nogil=True)
def _sift_up(values, docs, at):
    while at > 0:
        parent = (at - 1) // 2
        if values[at] < values[parent]:
            values[at], values[parent] = values[parent], values[at]
            docs[at], docs[parent] = docs[parent], docs[at]
            at = parent
        else:
            return


@numba.njit(cache=True, nogil=True)
def _one_query(terms, k, data, indptr, indices, scores, seen, out_scores, out_docs):
    """Top k of one query into out_scores/out_docs (score descending; unused slots stay 0)."""
    total = 0
    for t in terms:
        total += indptr[t + 1] - indptr[t]
    touched = np.empty(total, dtype=np.int32)
    n_touched = 0
    for t in terms:
        for j in range(indptr[t], indptr[t + 1]):
            doc = indices[j]
            if seen[doc] == 0:
                seen[doc] = 1
                touched[n_touched] = doc
                n_touched += 1
            scores[doc] += data[j]
    heap_values = np.empty(k, dtype=np.float32)
    heap_docs = np.empty(k, dtype=np.int32)
    size = 0
    for x in range(n_touched):
        doc = touched[x]
        value = scores[doc]
        if size < k:
            heap_values[size] = value
            heap_docs[size] = doc
            _sift_up(heap_values, heap_docs, size)
            size += 1
        elif value > heap_values[0]:
            heap_values[0] = value
            heap_docs[0] = doc
            _sift_down(heap_values, heap_docs, size, 0)
        scores[doc] = 0.0
        seen[doc] = 0
    # Pop the heap (lowest first) into the output from the back: score descending.
    for position in range(size - 1, -1, -1):
        out_scores[position] = heap_values[0]
        out_docs[position] = heap_docs[0]
        size -= 1
        heap_values[0] = heap_values[size]
        heap_docs[0] = heap_docs[size]
        _sift_down(heap_values, heap_docs, size, 0)


@numba.njit(cache=True, parallel=True)
def _top_k_parallel(flat_terms, pointers, k, data, indptr, indices, num_docs, workers):
    n_queries = len(pointers) - 1
    out_scores = np.zeros((n_queries, k), dtype=np.float32)
    out_docs = np.zeros((n_queries, k), dtype=np.int32)
    for worker in numba.prange(workers):
        scores = np.zeros(num_docs, dtype=np.float32)
        seen = np.zeros(num_docs, dtype=np.uint8)
        for i in range(worker, n_queries, workers):
            _one_query(
                flat_terms[pointers[i] : pointers[i + 1]],
                k,
                data,
                indptr,
                indices,
                scores,
                seen,
                out_scores[i],
                out_docs[i],
            )
    return out_scores, out_docs


def top_k(scores: dict, terms: list[list[int]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """(documents, scores), each (n queries, k), scores descending; rows with fewer than k matching
    documents end in zeros (score 0: no match). Same shapes as `bm25s.BM25.retrieve`."""
    pointers = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in terms], out=pointers[1:])
    flat = np.fromiter((t for query in terms for t in query), dtype=np.int64, count=int(pointers[-1]))
    k = max(1, min(int(k), int(scores["num_docs"])))
    workers = max(1, min(numba.get_num_threads(), len(terms)))
    values, docs = _top_k_parallel(
        flat, pointers, k, scores["data"], scores["indptr"], scores["indices"], int(scores["num_docs"]), workers
    )
    return docs, values

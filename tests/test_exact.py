"""ExactIndex against a brute-force full sort, on data built to tie exactly.

Vector components are small multiples of 1/8, so every inner product is exactly representable
in float32 whatever order BLAS sums in: ties (duplicate vectors, equal scores at rank k) are
real ties, and the only correct order is score descending, then id descending as a string.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from evals_repro.base.errors import UsageError
from evals_repro.metrics.ranking import trec_ranked as ranked
from evals_repro.retrieval.exact import ExactIndex


def _tied_data(seed: int, n: int, m: int, d: int = 16):
    rng = np.random.default_rng(seed)
    corpus = rng.integers(-2, 3, size=(n, d)).astype(np.float32) / 8
    corpus[n // 2 : n // 2 + n // 5] = corpus[: n // 5]  # exact duplicate vectors
    queries = rng.integers(-2, 3, size=(m, d)).astype(np.float32) / 8
    # Ids whose string order differs from their numeric order ("10" < "9").
    ids = [str(i) for i in rng.permutation(n)]
    return corpus, queries, ids


def _brute_force(corpus, queries, ids, k):
    exact = queries.astype(np.float64) @ corpus.astype(np.float64).T
    return [ranked({ids[j]: float(row[j]) for j in range(len(ids))}, k) for row in exact]


@pytest.mark.parametrize("budget", [None, 2_000, 40_000])  # one tile, and many small tiles
@pytest.mark.parametrize("k", [1, 7, 50, 400])  # 400 > corpus size
def test_equals_brute_force_with_ties(budget, k):
    corpus, queries, ids = _tied_data(seed=k, n=300, m=23)
    index = ExactIndex(corpus, ids, memory_budget=budget)
    got = index.search_ids(queries, k)
    expected = _brute_force(corpus, queries, ids, k)
    assert got == expected
    # The data really contains ties at the k boundary for some query (else the test proves little).
    if k < len(ids):
        assert any(row[k - 1][1] == row[k][1] for row in _brute_force(corpus, queries, ids, k + 1))


def _exact_dot(a, b) -> float:
    """Correctly rounded inner product (float32 products are exact in float64)."""
    return math.fsum(a.astype(np.float64) * b.astype(np.float64))


def test_random_unit_vectors_with_duplicates_tie_exactly():
    rng = np.random.default_rng(3)
    corpus = rng.standard_normal((2_000, 64)).astype(np.float32)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    corpus[1500:1600] = corpus[:100]
    queries = corpus[rng.choice(2_000, 40)] + 0.05 * rng.standard_normal((40, 64)).astype(np.float32)
    ids = [f"d{i}" for i in range(2_000)]
    index = ExactIndex(corpus, ids, memory_budget=100_000)
    indices, scores = index.search(queries, 10)
    full = queries.astype(np.float64) @ corpus.astype(np.float64).T
    for q in range(40):
        # Candidates from a float64 matmul, then the correctly rounded scores decide the order.
        candidates = np.argsort(-full[q])[:30]
        exact = {ids[j]: _exact_dot(queries[q], corpus[j]) for j in candidates}
        expected = ranked(exact, 10)
        assert [ids[j] for j in indices[q]] == [doc for doc, _ in expected]
        np.testing.assert_allclose(scores[q], [score for _, score in expected], rtol=0, atol=1e-12)
    # Duplicates (rows 1500-1599 copy rows 0-99) were retrieved, and score identically.
    retrieved = set(indices.ravel().tolist())
    pairs = [(j, j + 1500) for j in range(100) if j in retrieved and j + 1500 in retrieved]
    assert pairs
    for q, row in enumerate(indices.tolist()):
        for a, b in pairs:
            if a in row and b in row:
                assert scores[q, row.index(a)] == scores[q, row.index(b)]


@pytest.mark.parametrize("d", [37, 67, 1024])
def test_duplicates_score_identically_at_any_memory_alignment(d):
    """The float64 rescoring sums in an order fixed by the dimension alone: copies of a vector
    at odd float offsets (rows of 148 or 268 bytes, a base address 4 bytes past alignment) and a
    query repeated at other batch positions give bit-identical scores."""
    rng = np.random.default_rng(d)
    n = 301
    storage = np.empty(n * d + 1, dtype=np.float32)
    corpus = storage[1:].reshape(n, d)  # misaligned base
    corpus[:] = rng.standard_normal((n, d))
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    copies = [5, 6, 7, 8, 9, 10, 11, 150, 300]  # rows 4-11 start at every 4-byte offset mod 32
    corpus[copies] = corpus[4]
    queries = rng.standard_normal((9, d)).astype(np.float32)
    queries[[3, 8]] = queries[0]
    index = ExactIndex(corpus, [f"d{i:03d}" for i in range(n)], memory_budget=4_000)
    assert np.shares_memory(index.embeddings, corpus)
    indices, scores = index.search(queries, n)
    by_row = [dict(zip(row.tolist(), vals.tolist())) for row, vals in zip(indices, scores)]
    for found in by_row:
        assert {found[j] for j in [4, *copies]} == {found[4]}
    assert by_row[3] == by_row[0] == by_row[8]
    # The copies tie, so they sit together in id-descending order.
    first = indices[0].tolist()
    positions = sorted(first.index(j) for j in [4, *copies])
    assert [first[p] for p in positions] == sorted([4, *copies], reverse=True)
    assert positions == list(range(positions[0], positions[0] + len(positions)))


def test_no_copy_of_the_corpus_and_bounded_tiles():
    corpus = np.zeros((10_000, 32), dtype=np.float32)
    index = ExactIndex(corpus, [str(i) for i in range(10_000)], memory_budget=80_000)
    assert np.shares_memory(index.embeddings, corpus)
    query_block, corpus_block = index._blocks(500, 10, 80_000)
    assert query_block * (corpus_block * 4 + 10 * 24 + 64 * 12) <= 80_000  # score tile, heaps, bands
    assert corpus_block >= 100  # tiles stay wide enough for BLAS


def test_empty_queries_and_bad_input():
    index = ExactIndex(np.eye(3, dtype=np.float32), ["a", "b", "c"])
    indices, scores = index.search(np.zeros((0, 3), dtype=np.float32), 5)
    assert indices.shape == (0, 3) and scores.shape == (0, 3)
    with pytest.raises(UsageError, match="dimension 3"):
        index.search(np.zeros((1, 4), dtype=np.float32), 5)
    with pytest.raises(UsageError, match="top_k"):
        index.search(np.zeros((1, 3), dtype=np.float32), 0)
    with pytest.raises(UsageError, match="2 ids"):
        ExactIndex(np.eye(3, dtype=np.float32), ["a", "b"])


def test_a_mass_of_identical_vectors_tied_at_rank_k():
    """Thousands of duplicates tie at rank k: the id order decides, and scratch memory stays bounded."""
    corpus = np.tile(np.array([[0.6, 0.8, 0.0]], dtype=np.float32), (5_000, 1))
    corpus[[17, 4321]] = [1.0, 0.0, 0.0]  # two strictly better documents
    ids = [f"doc-{i:05d}" for i in range(5_000)]
    index = ExactIndex(corpus, ids, memory_budget=12_000)
    index.search(corpus[:4], 1)  # load the kernels and thread limits first: not the search's memory
    tracemalloc.start()
    got = index.search_ids(np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32), 5)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [doc for doc, _ in got[0]] == ["doc-04321", "doc-00017", "doc-04999", "doc-04998", "doc-04997"]
    assert [doc for doc, _ in got[1]] == ["doc-04999", "doc-04998", "doc-04997", "doc-04996", "doc-04995"]
    assert all(score == 0.0 for _, score in got[1])
    # Every tied page was a candidate, yet only k stay held per query: the scratch stays near the
    # budget (plus thread and interpreter overhead), far below holding every tied candidate
    # (24 bytes each: score, id rank, row).
    assert peak < 40_000 < 5_000 * 24

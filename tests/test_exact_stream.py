"""StreamedExactIndex (a matrix file read block by block) against ExactIndex and a brute-force sort.

As in test_exact.py, tied data has components that are small multiples of 1/8, so every inner
product is exact in float32 and float64 whatever the summation order: ties are real, and the only
correct order is score descending, then id descending as a string. Blocks are made tiny so that
block boundaries, ties at rank k and k itself straddle several blocks.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from evals_repro.base.errors import UsageError
from evals_repro.base.matrix_file import MatrixDamaged, MatrixFile, write_matrix
from evals_repro.metrics.ranking import trec_ranked as ranked
from evals_repro.retrieval.exact import ExactIndex
from evals_repro.retrieval.exact_stream import StreamedExactIndex


def _tied_data(seed: int, n: int, m: int, d: int = 16):
    rng = np.random.default_rng(seed)
    corpus = rng.integers(-2, 3, size=(n, d)).astype(np.float32) / 8
    corpus[n // 2 : n // 2 + n // 5] = corpus[: n // 5]  # exact duplicates, far apart (other blocks)
    queries = rng.integers(-2, 3, size=(m, d)).astype(np.float32) / 8
    ids = [str(i) for i in rng.permutation(n)]  # string order differs from numeric order
    return corpus, queries, ids


def _brute_force(corpus, queries, ids, k):
    exact = queries.astype(np.float64) @ corpus.astype(np.float64).T
    return [ranked({ids[j]: float(row[j]) for j in range(len(ids))}, k) for row in exact]


@pytest.mark.parametrize("segment_rows", [None, 1, 13, 64])  # a plain .npy; checksummed segments
@pytest.mark.parametrize("block_rows", [1, 7, 50, 1000])  # 1000 > n: one block
@pytest.mark.parametrize("k", [1, 7, 50, 400])  # 50 > most blocks; 400 > n
def test_equals_exact_index_and_brute_force_with_ties(tmp_path, segment_rows, block_rows, k):
    corpus, queries, ids = _tied_data(seed=k + block_rows, n=300, m=23)
    path = tmp_path / "m.npy"
    if segment_rows is None:
        np.save(path, corpus)
        matrix = MatrixFile.open(path)
        assert matrix.segments is None
    else:
        write_matrix(path, corpus, segment_rows)
        matrix = MatrixFile.open(path)
        assert len(matrix.segments) == math.ceil(300 / segment_rows)
    streamed = StreamedExactIndex(matrix, ids, block_rows=block_rows)
    got_rows, got_scores = streamed.search(queries, k)
    want_rows, want_scores = ExactIndex(corpus, ids).search(queries, k)
    assert np.array_equal(got_rows, want_rows) and np.array_equal(got_scores, want_scores)
    assert streamed.search_ids(queries, k) == _brute_force(corpus, queries, ids, k)
    if k < len(ids):  # the data really ties at the cut for some query
        assert any(row[k - 1][1] == row[k][1] for row in _brute_force(corpus, queries, ids, k + 1))


def test_a_tie_at_the_cut_spread_over_many_blocks_keeps_the_highest_ids(tmp_path):
    """Forty copies of one vector, one per 7-row block, tie at ranks 3..42; k = 10 keeps the
    copies with the largest ids, wherever their blocks come in the file."""
    rng = np.random.default_rng(5)
    n, d = 280, 8
    corpus = rng.integers(-1, 2, size=(n, d)).astype(np.float32) / 8
    corpus[:, 0] = 0  # every other row scores <= 7/64 against the query below
    query = np.zeros((1, d), dtype=np.float32)
    query[0, 0] = 1.0
    copies = np.arange(3, n, 7)
    corpus[copies] = corpus[copies[0]]
    corpus[copies, 0] = 0.5
    corpus[[100, 200], 0] = 0.75  # two better ones
    ids = [f"doc{(i * 37) % n:03d}" for i in range(n)]
    write_matrix(tmp_path / "m.npy", corpus, 7)
    got = StreamedExactIndex(MatrixFile.open(tmp_path / "m.npy"), ids, block_rows=7).search_ids(query, 10)
    tied = sorted((ids[i] for i in copies), reverse=True)[:8]
    assert [doc for doc, _ in got[0]] == sorted([ids[100], ids[200]], reverse=True) + tied
    assert got == _brute_force(corpus, query, ids, 10)


def test_random_unit_vectors_match_exact_index_bit_for_bit(tmp_path):
    """Real-valued scores (BLAS float32 differs from the exact score): the float64 rescoring
    gives ExactIndex's scores to the bit, and the order of correctly rounded scores."""
    rng = np.random.default_rng(3)
    n, d, m = 5_000, 96, 60
    corpus = rng.standard_normal((n, d)).astype(np.float32)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    corpus[4000:4100] = corpus[:100]  # duplicates in other blocks score identically
    queries = corpus[rng.choice(n, m)] + 0.05 * rng.standard_normal((m, d)).astype(np.float32)
    ids = [f"d{i}" for i in range(n)]
    write_matrix(tmp_path / "m.npy", corpus, 100)
    streamed = StreamedExactIndex(MatrixFile.open(tmp_path / "m.npy"), ids, block_rows=300)
    got_rows, got_scores = streamed.search(queries, 20)
    want_rows, want_scores = ExactIndex(corpus, ids, memory_budget=100_000).search(queries, 20)
    assert np.array_equal(got_rows, want_rows) and np.array_equal(got_scores, want_scores)
    full = queries.astype(np.float64) @ corpus.astype(np.float64).T
    for q in range(m):
        candidates = np.argsort(-full[q])[:60]
        exact = {ids[j]: math.fsum(queries[q].astype(np.float64) * corpus[j].astype(np.float64)) for j in candidates}
        assert [ids[j] for j in got_rows[q]] == [doc for doc, _ in ranked(exact, 20)]
        np.testing.assert_allclose(got_scores[q], [score for _, score in ranked(exact, 20)], rtol=0, atol=1e-12)


def test_passes_when_the_heaps_exceed_the_budget(tmp_path):
    corpus, queries, ids = _tied_data(seed=9, n=200, m=40)
    write_matrix(tmp_path / "m.npy", corpus, 16)
    streamed = StreamedExactIndex(MatrixFile.open(tmp_path / "m.npy"), ids, memory_budget=10_000, block_rows=32)
    assert streamed.passes(40, 30) == 7  # 6 queries' heaps (30 x 24 + 8 bytes each) per half budget
    seen = []
    rows, scores = streamed.search(queries, 30, on_rows=seen.append)
    assert sum(seen) == 7 * 200 and max(seen) <= 32
    assert np.array_equal(rows, ExactIndex(corpus, ids).search(queries, 30)[0])
    assert streamed.search_ids(queries, 30) == _brute_force(corpus, queries, ids, 30)


def test_empty_queries_k_above_n_and_bad_input(tmp_path):
    write_matrix(tmp_path / "m.npy", np.eye(3, dtype=np.float32))
    streamed = StreamedExactIndex(MatrixFile.open(tmp_path / "m.npy"), ["a", "b", "c"])
    rows, scores = streamed.search(np.zeros((0, 3), dtype=np.float32), 5)
    assert rows.shape == (0, 3) and scores.shape == (0, 3)
    assert streamed.search_ids(np.eye(3, dtype=np.float32)[[2]], 5) == [[("c", 1.0), ("b", 0.0), ("a", 0.0)]]
    with pytest.raises(UsageError, match="dimension 3"):
        streamed.search(np.zeros((1, 4), dtype=np.float32), 5)
    with pytest.raises(UsageError, match="top_k"):
        streamed.search(np.zeros((1, 3), dtype=np.float32), 0)
    with pytest.raises(UsageError, match="2 ids"):
        StreamedExactIndex(MatrixFile.open(tmp_path / "m.npy"), ["a", "b"])
    write_matrix(tmp_path / "empty.npy", np.zeros((0, 3), dtype=np.float32))
    empty = StreamedExactIndex(MatrixFile.open(tmp_path / "empty.npy"), [])
    assert empty.search(np.ones((2, 3), dtype=np.float32), 5)[0].shape == (2, 0)


@pytest.mark.parametrize("damage", ["flip", "truncate_rows", "trailer"])
def test_damaged_file_is_detected(tmp_path, damage):
    corpus, queries, ids = _tied_data(seed=1, n=120, m=4)
    path = tmp_path / "m.npy"
    write_matrix(path, corpus, 10)
    blob = bytearray(path.read_bytes())
    if damage == "flip":  # one bit of row 95: found when its block is read
        at = 4096 + 95 * 16 * 4 + 3
        blob[at] ^= 0x10
        path.write_bytes(bytes(blob))
        streamed = StreamedExactIndex(MatrixFile.open(path), ids, block_rows=20)
        with pytest.raises(MatrixDamaged, match=r"checksum mismatch in rows 90:100"):
            streamed.search(queries, 5)
        with pytest.raises(MatrixDamaged):
            MatrixFile.open(path).load()
        return
    if damage == "truncate_rows":
        path.write_bytes(bytes(blob[: 4096 + 100 * 16 * 4]))
    else:
        blob[-60] ^= 0x01
        path.write_bytes(bytes(blob))
    with pytest.raises(MatrixDamaged, match="truncated|trailer"):
        MatrixFile.open(path)


def test_memory_stays_at_the_buffers_not_the_file(tmp_path):
    """A 10 MB matrix searched with a 1 MB budget: numpy's peak stays near the budget."""
    rng = np.random.default_rng(0)
    corpus = rng.standard_normal((40_000, 64)).astype(np.float32)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    write_matrix(tmp_path / "m.npy", corpus, 128)
    ids = [str(i) for i in range(40_000)]
    streamed = StreamedExactIndex(MatrixFile.open(tmp_path / "m.npy"), ids, memory_budget=1 << 20, block_rows=1024)
    queries = corpus[:50]
    streamed.search(queries, 10)  # kernels and thread pools loaded first
    tracemalloc.start()
    rows, _ = streamed.search(queries, 10)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert rows[:, 0].tolist() == list(range(50))
    assert peak < 2 << 20 < corpus.nbytes // 4, peak


@pytest.mark.parametrize("block_rows, k", [(9, 10), (64, 10), (400, 3), (400, 12)])  # 13 chunks of 32 in 400
def test_float32_cancellation_is_caught_by_the_error_bound(tmp_path, block_rows, k):
    """Rows holding +2^26 and -2^26 next to small parts: the float32 matmul loses the small parts
    (whatever BLAS's summation order), the exact score is their sum. Only rescoring everything
    within the error bound of the k-th best finds the true top k, in memory and from disk."""
    rng = np.random.default_rng(11)
    n, d = 400, 16
    corpus = rng.integers(-16, 17, size=(n, d)).astype(np.float32) / 8
    for row in range(0, n, 2):
        a, b = rng.choice(d, 2, replace=False)
        corpus[row, a], corpus[row, b] = 2.0**26, -(2.0**26)
    queries = np.ones((3, d), dtype=np.float32) * np.array([[1.0], [0.5], [0.25]], dtype=np.float32)  # +-2^26 cancel
    ids = [f"doc{i:03d}" for i in range(n)]
    float32_top = np.argsort(-(queries @ corpus.T), axis=1, kind="stable")[:, :k]
    expected = _brute_force(corpus, queries, ids, k)
    assert any(  # the float32 scores alone would pick other documents
        {ids[j] for j in float32_top[q]} != {doc for doc, _ in expected[q]} for q in range(3)
    )
    write_matrix(tmp_path / "m.npy", corpus, 8)
    streamed = StreamedExactIndex(MatrixFile.open(tmp_path / "m.npy"), ids, block_rows=block_rows)
    assert streamed.search_ids(queries, k) == expected
    assert ExactIndex(corpus, ids).search_ids(queries, k) == expected


def test_an_error_in_any_thread_stops_the_search_and_every_thread(tmp_path):
    import threading

    corpus, queries, ids = _tied_data(seed=2, n=400, m=30)
    write_matrix(tmp_path / "m.npy", corpus, 10)
    streamed = StreamedExactIndex(MatrixFile.open(tmp_path / "m.npy"), ids, block_rows=20)
    before = threading.active_count()

    def interrupt(rows):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        streamed.search(queries, 5, on_rows=interrupt)
    assert threading.active_count() == before
    assert streamed.search_ids(queries, 5) == _brute_force(corpus, queries, ids, 5)  # usable again

"""BM25 through the harness versus raw bm25s in its fastest configuration, side by side.

Both sides tokenise + stem, index and retrieve the top 100 for ~1k queries on the same synthetic
corpus (Zipfian vocabulary, log-normal document lengths, fixed seed). The harness side also
fingerprints the corpus, writes its verified cache, sorts ties the trec_eval way and builds the
run dicts. Raw bm25s: `bm25s.tokenize` with a PyStemmer stemmer and no stopwords, the numba
backend, `n_threads=-1`. Numba compilation is warmed up on both sides first. Pairs run
interleaved (order alternating) because other jobs share the machine; the median ratio is reported.

    uv run pytest -m perf -s tests/perf/test_bm25_perf.py
    EVALS_REPRO_PERF_DOCS=50000 EVALS_REPRO_PERF_REPEATS=5 uv run pytest -m perf -s tests/perf/test_bm25_perf.py
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np
import pytest

from evals_repro.base.data import Page, Query, Subset
from evals_repro.retrieval.bm25 import BM25Retriever

pytestmark = pytest.mark.perf

N_DOCS = int(os.environ.get("EVALS_REPRO_PERF_DOCS", "200000"))
N_QUERIES = int(os.environ.get("EVALS_REPRO_PERF_QUERIES", "1000"))
REPEATS = int(os.environ.get("EVALS_REPRO_PERF_REPEATS", "3"))
TOP_K = 100
GOAL = 1.0

SYLLABLES = [
    "ka",
    "ro",
    "mi",
    "te",
    "lun",
    "sar",
    "ve",
    "dor",
    "pi",
    "an",
    "el",
    "tor",
    "us",
    "qua",
    "ni",
    "ber",
    "gal",
    "fen",
    "os",
    "tri",
]
SUFFIXES = ["", "", "", "s", "ing", "ed", "ation", "er", "ly", "ness"]  # so the stemmer merges forms


def synthetic_corpus(n_docs: int, n_queries: int, seed: int = 0, vocab_size: int = 60_000):
    """English-like pseudo-words with a Zipf(1.07) distribution; document lengths log-normal (median ~150)."""
    rng = np.random.default_rng(seed)
    words: set[str] = set()
    while len(words) < vocab_size:
        stem = "".join(rng.choice(SYLLABLES, int(rng.integers(1, 5))))
        words.add(stem + SUFFIXES[int(rng.integers(len(SUFFIXES)))])
    vocabulary = sorted(words)
    rng.shuffle(vocabulary)
    weights = 1.0 / np.arange(1, vocab_size + 1) ** 1.07
    cdf = np.cumsum(weights / weights.sum())
    lengths = np.clip(rng.lognormal(5.0, 0.7, n_docs).astype(np.int64), 5, 3000)
    flat = np.array(vocabulary, dtype=object)[np.searchsorted(cdf, rng.random(int(lengths.sum())) * cdf[-1])].tolist()
    bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    docs = [" ".join(flat[bounds[i] : bounds[i + 1]]) for i in range(n_docs)]
    # Queries favour mid-frequency words (flatter distribution), 3-11 words each.
    query_cdf = np.cumsum(weights**0.6 / (weights**0.6).sum())
    query_lengths = rng.integers(3, 12, n_queries)
    query_words = np.array(vocabulary, dtype=object)[
        np.searchsorted(query_cdf, rng.random(int(query_lengths.sum())) * query_cdf[-1])
    ].tolist()
    query_bounds = np.concatenate([[0], np.cumsum(query_lengths)]).tolist()
    queries = [" ".join(query_words[query_bounds[i] : query_bounds[i + 1]]) for i in range(n_queries)]
    return docs, queries


def raw_bm25s(docs: list[str], queries: list[str]):
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    corpus_tokens = bm25s.tokenize(docs, stopwords=None, stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene", backend="numba")
    retriever.index(corpus_tokens, show_progress=False)
    query_tokens = bm25s.tokenize(queries, stopwords=None, stemmer=stemmer, show_progress=False)
    return retriever.retrieve(query_tokens, k=TOP_K, show_progress=False, n_threads=-1)


def harness(subset: Subset, cache_dir) -> dict:
    return BM25Retriever("bm25", cache_dir).run(subset, subset.queries, TOP_K)


def _subset(docs: list[str], queries: list[str]) -> Subset:
    pages = [Page(f"doc{i}", text) for i, text in enumerate(docs)]
    query_list = [Query(f"q{i}", text, "english") for i, text in enumerate(queries)]
    return Subset("perf", "synthetic", "english", pages, query_list, {"q0": {"doc0": 1}})


def test_bm25_harness_versus_raw_bm25s(tmp_path):
    started = time.perf_counter()
    docs, queries = synthetic_corpus(N_DOCS, N_QUERIES)
    subset = _subset(docs, queries)
    print(
        f"\ncorpus: {N_DOCS} docs, {sum(len(d.split()) for d in docs) / N_DOCS:.0f} words/doc on average,"
        f" {N_QUERIES} queries, generated in {time.perf_counter() - started:.1f}s"
    )
    # Warm numba (compilation is per process) on both sides.
    small_docs, small_queries = synthetic_corpus(2000, 20, seed=1)
    harness(_subset(small_docs, small_queries), tmp_path / "warm")
    raw_bm25s(small_docs, small_queries)

    ratios, harness_times, raw_times = [], [], []
    for repeat in range(REPEATS):
        order = ["harness", "raw"] if repeat % 2 == 0 else ["raw", "harness"]
        times = {}
        for side in order:
            start = time.perf_counter()
            if side == "harness":
                run = harness(subset, tmp_path / f"cache{repeat}")  # a fresh cache: the index is built
            else:
                raw = raw_bm25s(docs, queries)
            times[side] = time.perf_counter() - start
        ratios.append(times["harness"] / times["raw"])
        harness_times.append(times["harness"])
        raw_times.append(times["raw"])
        print(f"pair {repeat + 1}: harness {times['harness']:.2f}s, bm25s {times['raw']:.2f}s, ratio {ratios[-1]:.3f}")
    median = statistics.median(ratios)
    print(
        f"median: harness {statistics.median(harness_times):.2f}s, bm25s {statistics.median(raw_times):.2f}s,"
        f" harness/bm25s {median:.3f} (goal <= {GOAL})"
    )

    # Same scores as bm25s for the documents both return (ids may differ only within ties).
    first = subset.queries[0].id
    raw_scores = dict(zip((f"doc{d}" for d in raw.documents[0].tolist()), raw.scores[0].tolist()))
    shared = set(raw_scores) & set(run[first])
    assert shared and all(run[first][d] == pytest.approx(raw_scores[d], rel=1e-6) for d in shared)
    assert median <= GOAL

"""Worker for test_bm25_msmarco_perf.py: one measured step per process, so each peak RSS is its own.

    python tests/perf/msmarco_scale.py STEP SCRATCH_DIR   (prints one JSON line)

Steps: `store` (write the synthetic corpus into a PageStore), `harness-build` (BM25 index from the
store, streamed), `harness-query` (load the memory-mapped index, top-100 for the queries), `raw-build`
(bm25s.tokenize with PyStemmer + BM25.index + save), `raw-query` (BM25.load(mmap=True) + retrieve).

The corpus: EVALS_REPRO_PERF_DOCS documents (default MS MARCO's 8,841,823). Lengths are log-normal
with MS MARCO's mean passage length, 55.98 words (BEIR, Thakur et al. 2021, Table 1), sigma 0.45,
clipped to 4..300 words (passages are a few sentences, never long documents). Words are English-like
pseudo-words drawn Zipf(1.07) from EVALS_REPRO_PERF_VOCAB types (default 2,000,000: MS MARCO
passages hold a few million distinct terms), generated chunk by chunk from fixed seeds, so both
sides index the same texts without the generator ever holding the whole corpus.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

N_DOCS = int(os.environ.get("EVALS_REPRO_PERF_DOCS", "8841823"))
N_QUERIES = int(os.environ.get("EVALS_REPRO_PERF_QUERIES", "97"))  # DL19 (43) + DL20 (54) judged queries
VOCAB = int(os.environ.get("EVALS_REPRO_PERF_VOCAB", "2000000"))
MEAN_WORDS = 55.98
SIGMA = 0.45
CHUNK = 65536
TOP_K = 100
MEM_CAP_GB = float(os.environ.get("EVALS_REPRO_PERF_MEM_CAP_GB", "18"))

SYLLABLES = "ka ro mi te lun sar ve dor pi an el tor us qua ni ber gal fen os tri mo ul za bre".split()
SUFFIXES = ["", "", "", "s", "ing", "ed", "ation", "er", "ly", "ness"]


def vocabulary() -> tuple[np.ndarray, np.ndarray]:
    """(words as an object array, Zipf cumulative weights), the same in every process."""
    rng = np.random.default_rng(12345)
    words: set[str] = set()
    while len(words) < VOCAB:
        n = VOCAB - len(words)
        counts = rng.integers(1, 6, n)
        picks = rng.integers(0, len(SYLLABLES), int(counts.sum()))
        suffixes = rng.integers(0, len(SUFFIXES), n)
        bounds = np.concatenate([[0], np.cumsum(counts)]).tolist()
        syllables = [SYLLABLES[i] for i in picks.tolist()]
        for i in range(n):
            words.add("".join(syllables[bounds[i] : bounds[i + 1]]) + SUFFIXES[suffixes[i]])
    ordered = sorted(words)[:VOCAB]
    np.random.default_rng(54321).shuffle(ordered)
    weights = 1.0 / np.arange(1, VOCAB + 1) ** 1.07
    return np.array(ordered, dtype=object), np.cumsum(weights / weights.sum())


def lengths_for(chunk: int, n: int) -> np.ndarray:
    rng = np.random.default_rng([7, chunk])
    mu = np.log(MEAN_WORDS) - SIGMA**2 / 2  # so the mean is MEAN_WORDS
    return np.clip(np.rint(rng.lognormal(mu, SIGMA, n)).astype(np.int64), 4, 300)


def corpus_chunks(words: np.ndarray, cdf: np.ndarray):
    """Lists of document texts, CHUNK documents at a time, deterministic per chunk."""
    for chunk, start in enumerate(range(0, N_DOCS, CHUNK)):
        n = min(CHUNK, N_DOCS - start)
        lengths = lengths_for(chunk, n)
        rng = np.random.default_rng([11, chunk])
        flat = words[np.searchsorted(cdf, rng.random(int(lengths.sum())))].tolist()
        bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
        yield [" ".join(flat[bounds[i] : bounds[i + 1]]) for i in range(n)]


def queries(words: np.ndarray, cdf: np.ndarray) -> list[str]:
    """3-10 words each (TREC DL queries average ~6 words), favouring mid-frequency words."""
    rng = np.random.default_rng(99)
    weights = np.diff(np.concatenate([[0.0], cdf]))
    flat_cdf = np.cumsum(weights**0.6 / (weights**0.6).sum())
    lengths = rng.integers(3, 11, N_QUERIES)
    picks = words[np.searchsorted(flat_cdf, rng.random(int(lengths.sum())) * flat_cdf[-1])].tolist()
    bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    return [" ".join(picks[bounds[i] : bounds[i + 1]]) for i in range(N_QUERIES)]


REPEATS = int(os.environ.get("EVALS_REPRO_PERF_REPEATS", "3"))


def cpu_seconds() -> float:
    """User + system time of this process, all threads: what a step costs, whatever else the shared
    machine runs at the same time (wall time is not)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20)


def rss_gib() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / (1 << 20)
    return 0.0


def _subset(scratch: Path, query_texts: list[str] | None = None):
    from evals_repro.base.data import Query, Subset
    from evals_repro.base.pagestore import open_store

    store = open_store(scratch / "store")
    assert store is not None, "run the store step first"
    qs = [Query(f"q{i}", text, "english") for i, text in enumerate(query_texts or [])]
    return Subset("perf", "msmarco-synthetic", "english", store, qs, {})


def _warm_harness(scratch: Path) -> None:
    """Compile (or load from numba's cache) the retrieval kernel on a tiny index."""
    from evals_repro.base.data import Page, Query, Subset
    from evals_repro.retrieval.bm25 import BM25Retriever

    pages = [Page(f"w{i}", f"warm word{i % 7} other{i % 3}") for i in range(200)]
    tiny = Subset("perf", "warm", "english", pages, [Query("q", "word1 other2", "english")], {})
    BM25Retriever("bm25", scratch / "warm-cache").run(tiny, tiny.queries, 10)


def step_store(scratch: Path) -> dict:
    from evals_repro.base.pagestore import build_store

    words, cdf = vocabulary()
    started = time.perf_counter()

    def pairs():
        doc = 0
        for texts in corpus_chunks(words, cdf):
            for text in texts:
                yield str(doc), text
                doc += 1

    store = build_store(scratch / "store", pairs())
    seconds = time.perf_counter() - started
    n_words = 0
    for texts in store.iter_texts():
        n_words += sum(t.count(" ") + 1 for t in texts)
    return {"seconds": seconds, "n_docs": len(store), "mean_words": n_words / max(1, len(store))}


@contextmanager
def measured_build() -> Iterator[dict]:
    """Wall and CPU seconds, load average and memory around one index build, the same for harness and peer."""
    figures: dict = {}
    before = rss_gib()
    load_before = os.getloadavg()[0]
    cpu = cpu_seconds()
    started = time.perf_counter()
    yield figures
    figures.update(
        seconds=time.perf_counter() - started,
        cpu_seconds=cpu_seconds() - cpu,
        loadavg=[load_before, os.getloadavg()[0]],
        peak_rss_gib=peak_rss_gib(),
        rss_before_gib=before,
    )


def step_harness_build(scratch: Path) -> dict:
    from evals_repro.retrieval.bm25 import BM25Retriever

    subset = _subset(scratch)
    with measured_build() as figures:
        index = BM25Retriever("bm25", scratch / "harness-cache").index(subset)
    files = sum(p.stat().st_size for p in (scratch / "harness-cache" / "bm25" / index.key).iterdir())
    figures.update(
        nnz=int(index.retriever.scores["indptr"][-1]), vocab=len(index.retriever.vocab_dict), index_bytes=files
    )
    return figures


def step_harness_query(scratch: Path) -> dict:
    from evals_repro.retrieval.bm25 import BM25Retriever

    _warm_harness(scratch)
    words, cdf = vocabulary()
    subset = _subset(scratch, queries(words, cdf))
    loads, runs = [], []
    for _ in range(REPEATS):  # each repeat: a fresh retriever loads (and verifies) the index, then queries
        retriever = BM25Retriever("bm25", scratch / "harness-cache")
        started = time.perf_counter()
        index = retriever.index(subset)
        loads.append(time.perf_counter() - started)
        assert index.cache_hit, "the index was rebuilt instead of loaded"
        started = time.perf_counter()
        run = retriever.run(subset, subset.queries, TOP_K)
        runs.append(time.perf_counter() - started)
        del retriever, index
    first = subset.queries[0].id
    return {
        "load_seconds": loads,
        "query_seconds": runs,
        "loadavg": os.getloadavg()[0],
        "peak_rss_gib": peak_rss_gib(),
        "n_queries": len(run),
        "full_rankings": sum(len(r) == TOP_K for r in run.values()),
        "first_query": list(run[first].items())[:20],
    }


def _raw_tokens(texts, stemmer):
    import bm25s

    return bm25s.tokenize(texts, stopwords=None, stemmer=stemmer, show_progress=False)


def step_raw_build(scratch: Path) -> dict:
    import bm25s
    import Stemmer

    words, cdf = vocabulary()
    texts = [text for chunk in corpus_chunks(words, cdf) for text in chunk]
    del words, cdf
    with measured_build() as figures:
        stemmer = Stemmer.Stemmer("english")
        tokens = _raw_tokens(texts, stemmer)
        retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene", backend="numba")
        retriever.index(tokens, show_progress=False)
        retriever.save(scratch / "raw-index")
    return figures


def step_raw_query(scratch: Path) -> dict:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    words, cdf = vocabulary()
    query_texts = queries(words, cdf)
    # Warm numba on a tiny memory-mapped index (compilation is per process for raw bm25s, and
    # read-only memory-mapped arrays are their own numba type).
    tiny = bm25s.BM25(k1=1.5, b=0.75, method="lucene", backend="numba")
    tiny.index(_raw_tokens([f"warm word{i % 7} other{i % 3}" for i in range(200)], stemmer), show_progress=False)
    tiny.save(scratch / "raw-warm")
    tiny = bm25s.BM25.load(scratch / "raw-warm", mmap=True)
    tiny.retrieve(_raw_tokens(["word1 other2"], stemmer), k=10, show_progress=False, n_threads=-1)
    loads, runs = [], []
    for _ in range(REPEATS):
        started = time.perf_counter()
        retriever = bm25s.BM25.load(scratch / "raw-index", mmap=True)
        loads.append(time.perf_counter() - started)
        started = time.perf_counter()
        tokens = bm25s.tokenize(query_texts, stopwords=None, stemmer=stemmer, show_progress=False)
        docs, scores = retriever.retrieve(tokens, k=TOP_K, show_progress=False, n_threads=-1)
        runs.append(time.perf_counter() - started)
        del retriever
    return {
        "load_seconds": loads,
        "query_seconds": runs,
        "peak_rss_gib": peak_rss_gib(),
        "first_query": [[str(d), float(s)] for d, s in zip(docs[0].tolist()[:20], scores[0].tolist()[:20])],
    }


STEPS = {
    "store": step_store,
    "harness-build": step_harness_build,
    "harness-query": step_harness_query,
    "raw-build": step_raw_build,
    "raw-query": step_raw_query,
}


def main() -> None:
    step, scratch = sys.argv[1], Path(sys.argv[2])
    cap = int(MEM_CAP_GB * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    try:
        result = STEPS[step](scratch)
        result["ok"] = True
    except MemoryError:
        result = {"ok": False, "error": f"MemoryError under a {MEM_CAP_GB:g} GiB address-space cap"}
        result["peak_rss_gib"] = peak_rss_gib()
    print(json.dumps({"step": step, **result}))


if __name__ == "__main__":
    main()

"""The measured side of test_contracts_perf.py, run as a child process with single-threaded BLAS.

    OPENBLAS_NUM_THREADS=1 python contracts_child.py <empty folder>

Times whole `evals_repro.run`s with everything on, against the same runs inside every switch of `BYPASSES`
(the peer), in interleaved pairs (order alternating), CPU time of this process; prints one JSON line:
per workload, the median of the pair ratios and both sides' medians.

Workloads: `run bm25 -b sample`; and two runs over a synthetic corpus of EVALS_REPRO_PERF_PAGES pages (100,000)
and EVALS_REPRO_PERF_QUERIES queries (500), top 100: a Python-object embedder under the harness's cache and exact
index (every row through the embedder checks), and a Python-object retriever doing its own exact search (every
query's pages through the run check). The objects are as cheap as a model can be (a few numpy operations per
call), so the checks' share is as large as it gets. Every run must write its result, the peer's too: a side
that failed would be timed doing less.

To time another cost the same way, add its switch (a context manager that turns it off) to `BYPASSES`.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

import evals_repro
from evals_repro.base import contracts

PAIRS = int(os.environ.get("EVALS_REPRO_PERF_PAIRS", "7"))
REPEATS = int(os.environ.get("EVALS_REPRO_PERF_REPEATS", "3"))  # sample runs per side of a pair (each is short)
PAGES = int(os.environ.get("EVALS_REPRO_PERF_PAGES", "100000"))
QUERIES = int(os.environ.get("EVALS_REPRO_PERF_QUERIES", "500"))
WIDTH = 64
TOP_K = 100

# What the peer runs without: each a context manager inside which that cost is not paid.
BYPASSES: list[Callable[[], contextlib.AbstractContextManager[None]]] = [contracts.unchecked]


@contextlib.contextmanager
def bypassed() -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for switch in BYPASSES:
            stack.enter_context(switch())
        yield


def vectors(texts: list[str]) -> np.ndarray:
    """A deterministic, never-zero vector per text (its length and first characters through sines)."""
    keys = np.asarray([[len(t), *map(ord, t[:6].ljust(6))] for t in texts], dtype=np.float64)
    return np.sin(keys @ np.linspace(0.1, 1.3, 7 * WIDTH).reshape(7, WIDTH) + 0.5).astype(np.float32)


class CheapEmbedder:
    """The cheapest embedder there is (so the checks weigh as much as they can)."""

    name = "perf-embed"
    model = "sines"
    dimension = WIDTH
    supports_images = False
    text_style = evals_repro.PageStyle.LABELLED
    batch_size = 4096

    def embed(self, items, input_type):
        return vectors([item.text or "" for item in items])

    def describe(self):
        return {"model": self.model}


class ExactRetriever:
    """Exact inner-product search of its own over the page vectors (float scores: with numpy ones, the peer's
    unchecked run would fail in pytrec_eval, as every run did before the checks)."""

    name = "perf-exact"

    def __init__(self):
        self.pages: np.ndarray | None = None

    def run(self, subset, queries, top_k):
        ids = [page.id for page in subset.pages]
        if self.pages is None or len(self.pages) != len(ids):
            self.pages = vectors([page.text for page in subset.pages])
        found = vectors([query.text for query in queries])
        run = {}
        for start in range(0, len(queries), 64):
            scores = found[start : start + 64] @ self.pages.T
            best = np.argpartition(-scores, top_k, axis=1)[:, :top_k]
            for query, row, picked in zip(queries[start : start + 64], scores, best):
                run[query.id] = dict(zip((ids[i] for i in picked), row[picked].tolist()))
        return run

    def describe(self):
        return {"exact": WIDTH}


def write_corpus(folder: Path) -> Path:
    """A BEIR folder: PAGES pages of a few words, QUERIES queries, one judged page each."""
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(5000)]
    subset = folder / "synthetic" / "only"
    (subset / "qrels").mkdir(parents=True)
    with open(subset / "corpus.jsonl", "w", encoding="utf-8") as out:
        for i in range(PAGES):
            text = " ".join(words[j] for j in rng.integers(0, len(words), 12))
            out.write(json.dumps({"_id": f"p{i}", "title": "", "text": text}) + "\n")
    with open(subset / "queries.jsonl", "w", encoding="utf-8") as out:
        for i in range(QUERIES):
            out.write(json.dumps({"_id": f"q{i}", "text": " ".join(rng.choice(words, 4))}) + "\n")
    qrels = "".join(f"q{i}\tp{(i * 7919) % PAGES}\t1\n" for i in range(QUERIES))
    (subset / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return folder / "synthetic"


def written(summary) -> None:
    failed = [f"{o.subset}: {o.reason}" for o in summary.outcomes if o.status != "written"]
    assert not failed, failed


def cpu(work: Callable[[], object]) -> float:
    started = time.process_time()
    work()
    return time.process_time() - started


def side_by_side(work: Callable[[str], object], repeats: int) -> dict[str, float]:
    """Interleaved pairs, order alternating: the median of checked/bypassed pair ratios, and each side's median."""
    work("warm-checked")
    with bypassed():
        work("warm-bypassed")
    ratios, checked, peer = [], [], []
    for pair in range(PAIRS):
        times: dict[bool, float] = {}
        for on in (True, False) if pair % 2 == 0 else (False, True):
            with contextlib.nullcontext() if on else bypassed():
                times[on] = sum(cpu(lambda tag=f"{pair}-{on}-{r}": work(tag)) for r in range(repeats))
        checked.append(times[True])
        peer.append(times[False])
        ratios.append(times[True] / times[False])
    return {"ratio": statistics.median(ratios), "checked": statistics.median(checked), "peer": statistics.median(peer)}


def main(root: Path) -> None:
    sample_cache = root / "sample-cache"

    def bm25(tag: str) -> None:
        written(evals_repro.run("bm25", benchmark="sample", results_dir=root / "r" / tag, cache_dir=sample_cache))

    corpus = write_corpus(root / "data")

    def embedder(tag: str) -> None:  # a fresh cache: every page is embedded, so every row is checked
        folders = {"results_dir": root / "r" / f"e{tag}", "cache_dir": root / "c" / f"e{tag}"}
        written(
            evals_repro.run(embedder=CheapEmbedder(), name="perf-embed", benchmark=str(corpus), top_k=TOP_K, **folders)
        )

    retriever_object = ExactRetriever()  # its page vectors computed once, in the warm-up

    def retriever(tag: str) -> None:
        folders = {"results_dir": root / "r" / f"x{tag}", "cache_dir": root / "c" / "x"}
        written(
            evals_repro.run(
                retriever=retriever_object, name="perf-exact", benchmark=str(corpus), top_k=TOP_K, **folders
            )
        )

    figures = {
        "bm25 sample": side_by_side(bm25, REPEATS),
        f"embedder object, {PAGES:,} pages": side_by_side(embedder, 1),
        f"retriever object, {PAGES:,} pages": side_by_side(retriever, 1),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

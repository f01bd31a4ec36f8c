"""The measured side of test_plugin_overhead.py, run as a child process with single-threaded BLAS.

    OPENBLAS_NUM_THREADS=1 python plugin_child.py <empty folder>

Installs the plugin into the folder (a `.dist-info` with `entry_points.txt`, what an installer writes),
puts it on sys.path before evals_repro looks for plugins, and prints one JSON line of figures.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

PAIRS = int(os.environ.get("EVALS_REPRO_PERF_PAIRS", "21"))
REPEATS = int(os.environ.get("EVALS_REPRO_PERF_REPEATS", "5"))

PLUGIN_SOURCE = '''
"""An in-house first stage: TF-IDF cosine over a hashed vocabulary."""

import zlib

import numpy as np

WIDTH = 4096


def counts(texts):
    matrix = np.zeros((len(texts), WIDTH), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in text.lower().split():
            matrix[row, zlib.crc32(word.encode()) % WIDTH] += 1.0
    return matrix


class TfIdfRetriever:
    """TF-IDF cosine (hashed vocabulary of 4096)."""

    name = "perf-tfidf"

    def run(self, subset, queries, top_k):
        ids = [page.id for page in subset.pages]
        pages = counts([(page.title or "") + " " + page.text for page in subset.pages])
        idf = np.log((1 + len(ids)) / (1 + (pages > 0).sum(axis=0))) + 1.0
        pages = pages * idf
        pages /= np.maximum(np.linalg.norm(pages, axis=1, keepdims=True), 1e-9)
        found = counts([query.text for query in queries]) * idf
        found /= np.maximum(np.linalg.norm(found, axis=1, keepdims=True), 1e-9)
        scores = found @ pages.T
        run = {}
        for query, row in zip(queries, scores):
            best = np.argsort(-row, kind="stable")[:top_k]
            run[query.id] = {ids[i]: float(row[i]) for i in best}
        return run

    def describe(self):
        return {"tfidf": WIDTH}
'''


def install_plugin(folder: Path) -> None:
    (folder / "evals_repro_perf_plugin.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    info = folder / "evals_repro_perf_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evals-repro-perf-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[evals_repro.retrievers]\nperf-tfidf = evals_repro_perf_plugin:TfIdfRetriever\n"
    )
    # Installed editable (PEP 610), as a researcher iterates: its identity digests its module's file, once a run.
    (info / "direct_url.json").write_text(json.dumps({"url": folder.as_uri(), "dir_info": {"editable": True}}))


def compare(measured: Callable[[], None], peer: Callable[[], None], repeats: int = REPEATS) -> dict[str, float]:
    """Interleaved pairs (order alternating) of CPU time: min(measured) / min(peer), the median pair
    ratio, and both minimums (seconds)."""
    measured(), peer()  # warm both
    ratios, a_times, b_times = [], [], []
    for i in range(PAIRS):
        order = [(measured, a_times), (peer, b_times)]
        for call, times in order if i % 2 == 0 else order[::-1]:
            started = time.process_time()
            for _ in range(repeats):
                call()
            times.append((time.process_time() - started) / repeats)
        ratios.append(a_times[-1] / b_times[-1])
    return {
        "ratio": min(a_times) / min(b_times),
        "median_ratio": statistics.median(ratios),
        "measured": min(a_times),
        "peer": min(b_times),
    }


def hashing_cost() -> dict[str, float]:
    """What digesting a plugin package's files costs when its identity is first made (once a run): evals_repro's
    own package stands in for a large plugin (the least of 5 cold digests, seconds of CPU)."""
    from evals_repro.base import identity

    root = Path(identity.__file__).resolve().parents[1]
    files = identity._files(root)
    times = []
    for _ in range(5):
        identity._DIGESTS.clear()
        started = time.process_time()
        identity.sources_digest(root)
        times.append(time.process_time() - started)
    return {"seconds": min(times), "files": len(files), "bytes": sum(f.stat().st_size for f in files)}


def main(folder: Path) -> None:
    site = folder / "site"
    site.mkdir()
    install_plugin(site)
    sys.path.insert(0, str(site))

    import evals_repro
    from evals_repro.base import registry
    from evals_repro.base.context import MethodContext
    from evals_repro.base.registry import METHODS
    from evals_repro.benchmarks import LoadOptions, get_benchmark, load_subset
    from evals_repro.methods.pipeline import PipelineSpec
    from evals_repro.runner.scoring import retrieve

    decl = get_benchmark("sample")  # imports importlib.metadata, as every run does
    entry = METHODS.get("perf-tfidf")
    assert entry is not None and entry.plugin is not None
    from evals_repro.methods.plugins import identity_of

    assert identity_of(entry).install == "editable"  # its file is digested
    registry._SCANNED.clear()  # what reading the installed entry points costs, once per process
    started = time.perf_counter()
    assert [ep.name for ep in registry.entry_points_of("evals_repro.retrievers")] == ["perf-tfidf"]
    discovery = time.perf_counter() - started
    from evals_repro_perf_plugin import TfIdfRetriever  # type: ignore[import-not-found]

    subsets = [load_subset(decl, name, LoadOptions()) for name in decl.subset_names]
    queries = {s.name: s.queries_in([s.native_language]) for s in subsets}

    def through_plugin() -> None:
        ctx = MethodContext(benchmark="sample", cache_dir=folder / "cache")
        retriever = PipelineSpec.parse("perf-tfidf").build(ctx)
        for subset in subsets:
            retrieve(subset, retriever, queries[subset.name], 100)

    def direct() -> None:
        retriever = TfIdfRetriever()
        for subset in subsets:
            retriever.run(subset, queries[subset.name], 100)

    retrieval = compare(through_plugin, direct)
    for name in ("perf-tfidf-builtin", "perf-tfidf-control"):
        METHODS.register(name, description="the plugin's class as a built-in")(lambda name, ctx: TfIdfRetriever())
    runs = iter(range(10**6))

    def whole(method: str) -> Callable[[], None]:
        def call() -> None:
            evals_repro.run(method, results_dir=folder / f"results-{next(runs)}", cache_dir=folder / "cache")

        return call

    as_builtin = compare(whole("perf-tfidf"), whole("perf-tfidf-builtin"), repeats=1)
    control = compare(whole("perf-tfidf-control"), whole("perf-tfidf-builtin"), repeats=1)
    figures = {"retrieval": retrieval, "as_builtin": as_builtin, "control": control, "discovery": discovery}
    figures["hashing"] = hashing_cost()
    print(json.dumps(figures))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

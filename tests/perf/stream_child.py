"""The measured side of test_exact_stream_perf.py, run as a child process under an address-space cap.

    python stream_child.py baseline <matrix> <queries> <k> <slice rows> <out.npz>
    python stream_child.py stream <matrix> <queries> <k> <out.npz>
    python stream_child.py cache <cache root> <items> <dimension> <reference .npy> <rounds>

Each prints one JSON line of figures. "Cold" means the file's pages were dropped from the page
cache (posix_fadvise DONTNEED; `fincore` confirms how much stayed) right before the timed read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

READ_BYTES = 64 << 20


def status_kb(field: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def drop(paths) -> None:
    """Evict the files' clean pages from the page cache (they were fsynced when written)."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def resident_bytes(path) -> int:
    """Bytes of the file in the page cache (util-linux fincore); -1 when it is unavailable."""
    try:
        out = subprocess.run(
            ["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES", str(path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return int(out.split()[0])
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError):
        return -1


def sequential_read_seconds(path) -> float:
    """Read the whole file in 64 MiB pieces into one reused NumPy buffer."""
    buffer = np.empty(READ_BYTES, dtype=np.uint8)
    view = memoryview(buffer)
    start = time.perf_counter()
    with open(path, "rb", buffering=0) as handle:
        while handle.readinto(view):
            pass
    return time.perf_counter() - start


def ids_for(rows: int) -> list[str]:
    return [f"doc{i}" for i in range(rows)]  # string order is not row order ("doc10" < "doc9")


def baseline(matrix_path, queries_path, k, slice_rows, out) -> dict:
    """Cold sequential read of the file, then ExactIndex in memory over slices that fit the cap:
    the summed search time, and the slices' top k merged into the corpus's top k."""
    from evals_repro.base.matrix_file import MatrixFile
    from evals_repro.retrieval.exact import ExactIndex, id_ranks

    matrix = MatrixFile.open(matrix_path)
    queries = np.load(queries_path)
    ids = ids_for(matrix.rows)
    warm = np.random.default_rng(1).standard_normal((20_000, matrix.dimension), dtype=np.float32)
    ExactIndex(warm, ids[:20_000]).search(queries, k)  # kernels, thread pools, BLAS buffers
    del warm
    drop([matrix_path])
    resident = resident_bytes(matrix_path)
    read_s = sequential_read_seconds(matrix_path)
    slice_rows = max(1, min(slice_rows, matrix.rows))
    block = np.empty((slice_rows, matrix.dimension), dtype=np.float32)
    found_rows, found_scores, search_s, build_s = [], [], 0.0, 0.0
    with matrix.reader() as reader:
        for start in range(0, matrix.rows, slice_rows):
            stop = min(matrix.rows, start + slice_rows)
            rows = block[: stop - start]
            reader.read(start, stop, rows)  # slices are whole checksummed segments
            began = time.perf_counter()
            index = ExactIndex(rows, ids[start:stop])
            built = time.perf_counter()
            part_rows, part_scores = index.search(queries, k)
            search_s += time.perf_counter() - built
            build_s += built - began
            found_rows.append(part_rows + start)
            found_scores.append(part_scores)
            del index
    ranks = id_ranks(ids)
    all_rows, all_scores = np.concatenate(found_rows, axis=1), np.concatenate(found_scores, axis=1)
    top = min(k, matrix.rows)
    merged_rows = np.empty((len(queries), top), dtype=np.int64)
    merged_scores = np.empty((len(queries), top), dtype=np.float64)
    for q in range(len(queries)):
        order = np.lexsort((-ranks[all_rows[q]], -all_scores[q]))[:top]  # score desc, then id desc
        merged_rows[q], merged_scores[q] = all_rows[q, order], all_scores[q, order]
    np.savez(out, rows=merged_rows, scores=merged_scores)
    return {
        "read_s": read_s,
        "resident_before_read": resident,
        "file_bytes": os.path.getsize(matrix_path),
        "ram_search_s": search_s,
        "ram_build_s": build_s,
        "slices": -(-matrix.rows // slice_rows),
        "peak_rss": status_kb("VmHWM") * 1024,
    }


def stream(matrix_path, queries_path, k, out) -> dict:
    """StreamedExactIndex over the file, read cold; then the cold sequential read once more."""
    from evals_repro.base.matrix_file import MatrixFile, write_matrix
    from evals_repro.retrieval.exact_stream import StreamedExactIndex

    matrix = MatrixFile.open(matrix_path)
    queries = np.load(queries_path)
    warm_path = Path(out).with_suffix(".warm.npy")
    warm = write_matrix(warm_path, np.random.default_rng(1).standard_normal((20_000, matrix.dimension), np.float32))
    StreamedExactIndex(warm, ids_for(20_000)).search(queries, k)  # kernels, thread pools, BLAS buffers
    warm_path.unlink()
    began = time.perf_counter()
    index = StreamedExactIndex(matrix, ids_for(matrix.rows))
    build_s = time.perf_counter() - began
    drop([matrix_path])
    resident = resident_bytes(matrix_path)
    began = time.perf_counter()
    rows, scores = index.search(queries, k)
    search_s = time.perf_counter() - began
    np.savez(out, rows=rows, scores=scores)
    drop([matrix_path])  # the read time again, right after: the disk's speed drifts
    read_after_s = sequential_read_seconds(matrix_path)
    return {
        "read_after_s": read_after_s,
        "stream_search_s": search_s,
        "stream_build_s": build_s,
        "resident_before_search": resident,
        "passes": index.passes(len(queries), k),
        "peak_rss": status_kb("VmHWM") * 1024,
    }


def cache_items(count: int):
    """Passage-like texts of ~600 characters, all distinct."""
    from evals_repro.embedders.base import EmbedItem

    words = " ".join(f"w{i % 997}x{i % 13}" for i in range(400))
    return [EmbedItem(text=f"title: passage {i}\n{words[i % 200 : i % 200 + 600]}") for i in range(count)]


class RandomEmbedder:
    """Unit random vectors (the cache does not care what they mean)."""

    name = "perf-random"
    supports_images = False

    def __init__(self, dimension: int):
        self.dimension = dimension
        self.rng = np.random.default_rng(0)

    def describe(self):
        return {"model": "perf-random", "dimension": self.dimension}

    def embed(self, items, input_type):
        vectors = self.rng.standard_normal((len(items), self.dimension), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors


def cache(root, count, dimension, reference, rounds) -> dict:
    """`EmbeddingCache.embed` of a fully cached list against np.load of the same bytes (the
    list's matrix file, which the cache reads), warm and cold; then once from the chunk files.

    The lookup (every item's digest) is timed on its own, and the reads run back to back: on
    this VM a fresh 4 GiB array costs ~3 s more when the memory has been free for a second or
    two (handed back to the host), so each timed read directly follows the previous one's free,
    both sides alike, after one untimed primer."""
    from evals_repro.base.matrix_file import MatrixFile
    from evals_repro.embedders.cache import EmbeddingCache

    items = cache_items(count)
    chunk_files = sorted(str(p) for p in Path(root).rglob("*.emb"))
    figures: dict = {"chunk_files": len(chunk_files), "bytes": count * dimension * 4}

    def store() -> EmbeddingCache:
        return EmbeddingCache(root, RandomEmbedder(dimension), call_size=4096)

    lookup_times = []
    for _ in range(rounds):
        began = time.perf_counter()
        lookup = store().lookup(items, "document")
        lookup_times.append(time.perf_counter() - began)
    figures["lookup_s"] = lookup_times

    def numpy_read() -> float:
        began = time.perf_counter()
        matrix = np.load(reference)
        seconds = time.perf_counter() - began
        del matrix
        return seconds

    def cache_read(check: bool = False) -> float:
        cache = store()
        began = time.perf_counter()
        matrix = cache.embed_matrix(items, "document", lookup=lookup)
        seconds = time.perf_counter() - began
        assert cache.usage.get("cache_hits") == count and cache.usage.get("embedded_items") == 0
        if check:  # the same rows as the reference, compared block by block (no second 4 GiB copy)
            ref = MatrixFile.open(reference)
            with ref.reader() as reader:
                for start, stop in ref.blocks(16_384):
                    buffer = np.empty((stop - start, dimension), dtype=np.float32)
                    assert np.array_equal(reader.read(start, stop, buffer), matrix[start:stop])
        del matrix
        return seconds

    cache_read(check=True)
    for condition in ("warm", "cold"):
        numpy_times, read_times = [], []
        numpy_read()  # the primer (and, warm, every byte into the page cache)
        for round_ in range(rounds):
            for side in ("numpy", "cache") if round_ % 2 == 0 else ("cache", "numpy"):
                if condition == "cold":
                    drop([reference])
                    if "resident_after_drop" not in figures:
                        figures["resident_after_drop"] = resident_bytes(reference)
                if side == "numpy":
                    numpy_times.append(numpy_read())
                else:
                    read_times.append(cache_read())
        figures[condition] = {"numpy_s": numpy_times, "read_s": read_times}
    # Once: the load before the list's matrix file exists (cold chunk files; it writes the file).
    Path(reference).unlink()
    drop(chunk_files)
    began = time.perf_counter()
    cache = store()
    first = cache.embed_matrix(items, "document")
    figures["first_load_s"] = time.perf_counter() - began
    del first
    figures["peak_rss"] = status_kb("VmHWM") * 1024
    return figures


def main(argv: list[str]) -> None:
    command = argv[1]
    if command == "baseline":
        figures = baseline(argv[2], argv[3], int(argv[4]), int(argv[5]), argv[6])
    elif command == "stream":
        figures = stream(argv[2], argv[3], int(argv[4]), argv[5])
    elif command == "cache":
        figures = cache(argv[2], int(argv[3]), int(argv[4]), argv[5], int(argv[6]))
    else:
        raise SystemExit(f"unknown command {command}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main(sys.argv)

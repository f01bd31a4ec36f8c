"""Exact top-k over a matrix file too large for memory: ExactIndex's results, read block by block.

The corpus rows are read once per search, in blocks, into a ring of four reused buffers: a
reader thread fills them (pread, segment checksums, the block's largest row norm for the float32
error bound) while one thread per query group scores the blocks already read, each at its own
pace, so reading the file and searching overlap. Each block is scored like an ExactIndex tile
(BLAS float32 matmul, then the numba scan), except that a query is in exact mode from the
start: a float32 score within the error bound of the query's k-th best is rescored in float64
while its row is in memory. The heaps therefore hold exact scores only, and the top k (score
descending, then document id descending) is the same, id for id and bit for bit, as
ExactIndex's on the same matrix.

Memory: the read buffers, one score tile per search thread and the heaps (24 bytes per query
and k), within `memory_budget` (default 256 MiB); the file's size does not matter. Queries whose
heaps would take more than half the budget are searched in several passes over the file.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base.errors import UsageError
from ..base.matrix_file import MatrixFile
from .exact import (
    _HEAP_BYTES_PER_ENTRY,
    _THREADS,
    _blas_controller,
    _spans,
    error_scale,
    id_ranks,
    search_outputs,
)

DEFAULT_BUDGET = 256 << 20
_MAX_QUERY_BLOCK = 512  # queries per tile: BLAS is efficient from a few hundred on
_MIN_BLOCK_ROWS = 4096  # narrower tiles slow BLAS down (see exact.py)
_PIECE_BYTES = 4 << 20  # per read call
_TILE_COLUMNS = 8192  # rows per score tile
_SLOTS = 4  # read buffers: the reader fills one while the search threads work through the others


class _Pipeline:
    """One reader thread and one thread per query group over a ring of read buffers (slots).

    Block n goes into slot n % slots once every group is done with block n - slots; each group
    searches the blocks in order as they arrive, without waiting for the other groups, so a
    thread that the scheduler slows down (other processes on the machine) holds back no one
    until it is a ring behind. The caller's thread reports blocks done by every group."""

    def __init__(self, blocks: int, slots: int, groups: int):
        self.blocks, self.slots, self.groups = blocks, slots, groups
        self.cond = threading.Condition()
        self.loaded: dict[int, Any] = {}  # block -> what `load` returned, until every group has it
        self.published = 0  # blocks 0 .. published - 1 are loaded
        self.progress = [0] * groups  # blocks each group has searched
        self.error: BaseException | None = None

    def _released(self) -> int:
        return min(self.progress)

    def _wait(self, ready: Callable[[], bool]) -> bool:
        """Wait (holding the lock) until `ready()` or a failure elsewhere; False on failure."""
        while self.error is None and not ready():
            self.cond.wait()
        return self.error is None

    def _fail(self, exc: BaseException) -> None:
        with self.cond:
            if self.error is None:
                self.error = exc
            self.cond.notify_all()

    def _read_all(self, load: Callable[[int], Any]) -> None:
        try:
            for number in range(self.blocks):
                with self.cond:
                    if not self._wait(lambda: number - self._released() < self.slots):  # noqa: B023 (waited on here)
                        return
                loaded = load(number)
                with self.cond:
                    self.loaded[number] = loaded
                    self.published = number + 1
                    self.cond.notify_all()
        except BaseException as exc:  # handed to the caller's thread
            self._fail(exc)

    def _search_all(self, group: int, search: Callable[[int, int, Any], None]) -> None:
        try:
            for number in range(self.blocks):
                with self.cond:
                    if not self._wait(lambda: self.published > number):  # noqa: B023 (waited on here)
                        return
                    loaded = self.loaded[number]
                search(group, number, loaded)
                with self.cond:
                    self.progress[group] = number + 1
                    if self._released() > number:
                        self.loaded.pop(number, None)
                    self.cond.notify_all()
        except BaseException as exc:  # handed to the caller's thread
            self._fail(exc)

    def run(
        self,
        load: Callable[[int], Any],
        search: Callable[[int, int, Any], None],
        done: Callable[[int], None],
    ) -> None:
        """load(block) in the reader thread, search(group, block, loaded) in each group's
        thread, done(block) here once every group has searched it; the first error is raised."""
        threads = [threading.Thread(target=self._read_all, args=(load,), daemon=True)]
        threads += [
            threading.Thread(target=self._search_all, args=(group, search), daemon=True) for group in range(self.groups)
        ]
        for thread in threads:
            thread.start()
        try:
            for number in range(self.blocks):
                with self.cond:
                    if not self._wait(lambda: self._released() > number):  # noqa: B023 (waited on here)
                        break
                done(number)
        except BaseException as exc:
            self._fail(exc)
        finally:
            for thread in threads:
                thread.join()
        if self.error is not None:
            raise self.error


class StreamedExactIndex:
    """Exact top-k search over the float32 rows of `matrix` (a file), which belong to `ids`."""

    def __init__(
        self,
        matrix: MatrixFile,
        ids: Sequence[str],
        memory_budget: int | None = None,
        block_rows: int | None = None,
    ):
        if len(ids) != matrix.rows:
            raise UsageError(f"{matrix.path} has {matrix.rows} rows but {len(ids)} ids", "pass one id per row")
        self.matrix = matrix
        self.ids = list(ids)
        self.memory_budget = memory_budget if memory_budget is not None else DEFAULT_BUDGET
        self.block_rows = block_rows  # fixed rows per block (tests); default: from the budget
        self.id_rank = id_ranks(self.ids)

    @property
    def dimension(self) -> int:
        return self.matrix.dimension

    def __len__(self) -> int:
        return self.matrix.rows

    def search(
        self, queries: np.ndarray, top_k: int, on_rows: Callable[[int], None] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return (row indices, float64 exact scores), each (n_queries, min(top_k, n)), best first.
        `on_rows(count)` is called as each block of rows has been searched (for a progress bar)."""
        queries, indices, scores = search_outputs(queries, top_k, self.dimension, len(self))
        m, k = indices.shape
        if m == 0 or k == 0:
            return indices, scores
        per_pass = self._queries_per_pass(m, k)
        for q0 in range(0, m, per_pass):
            q1 = min(m, q0 + per_pass)
            self._pass(queries[q0:q1], k, indices[q0:q1], scores[q0:q1], on_rows)
        return indices, scores

    def _queries_per_pass(self, n_queries: int, k: int) -> int:
        return max(1, min(n_queries, (self.memory_budget // 2) // (k * _HEAP_BYTES_PER_ENTRY + 8)))

    def passes(self, n_queries: int, top_k: int) -> int:
        """Reads of the file a search of `n_queries` takes (`on_rows` counts every row of each)."""
        k = min(top_k, len(self))
        return 0 if n_queries == 0 or k == 0 else math.ceil(n_queries / self._queries_per_pass(n_queries, k))

    def _pass(self, queries, k, indices, scores, on_rows) -> None:
        """Search `queries` with one read of the file."""
        from . import exact_kernels

        m, d = queries.shape
        groups = _spans(m, _THREADS)
        query_block = min(_MAX_QUERY_BLOCK, max(stop - start for start, stop in groups))
        heaps = m * (k * _HEAP_BYTES_PER_ENTRY + 8)
        if self.block_rows is not None:
            target = self.block_rows
        else:
            tiles_bytes = len(groups) * query_block * _TILE_COLUMNS * 4  # one score tile per thread
            room = self.memory_budget - heaps - tiles_bytes
            target = max(_MIN_BLOCK_ROWS, room // (_SLOTS * d * 4))
        blocks = self.matrix.blocks(target)
        widest = max(stop - start for start, stop in blocks)
        buffers = [np.empty((widest, d), dtype=np.float32) for _ in range(min(_SLOTS, len(blocks)))]
        tile_columns = min(widest, max(1, _TILE_COLUMNS))
        tiles = [np.empty(query_block * tile_columns, dtype=np.float32) for _ in groups]
        values = np.empty((m, k), dtype=np.float64)
        ranks = np.empty((m, k), dtype=np.int64)
        cols = np.empty((m, k), dtype=np.int64)
        sizes = np.zeros(m, dtype=np.int64)
        query_scale = error_scale(d) * np.linalg.norm(queries, axis=1).astype(np.float64)

        def load(number: int, reader) -> tuple[np.ndarray, float]:
            """Read a block in ~4 MiB pieces, each checksummed and normed while in the CPU cache."""
            start, stop = blocks[number]
            rows = buffers[number % len(buffers)][: stop - start]
            largest = 0.0
            for a, b in self.matrix.blocks(max(1, _PIECE_BYTES // (4 * d)), start, stop):
                piece = reader.read(a, b, rows[a - start : b - start])
                largest = max(largest, exact_kernels.max_square_norm(piece, 0, len(piece)))
            return rows, float(np.sqrt(largest)) * 1.0001

        def search_group(group: int, rows: np.ndarray, c0: int, max_norm: float) -> None:
            g0, g1 = groups[group]
            error = query_scale * max_norm
            for t0 in range(0, len(rows), tile_columns):
                part = rows[t0 : t0 + tile_columns]
                width = len(part)
                for b0 in range(g0, g1, query_block):
                    b1 = min(g1, b0 + query_block)
                    scored = tiles[group][: (b1 - b0) * width].reshape(b1 - b0, width)
                    np.matmul(queries[b0:b1], part.T, out=scored)
                    exact_kernels.scan_block(
                        scored,
                        c0 + t0,
                        queries[b0:b1],
                        part,
                        self.id_rank,
                        error[b0:b1],
                        values,
                        ranks,
                        cols,
                        sizes,
                        b0,
                    )

        with contextlib.ExitStack() as stack:
            reader = stack.enter_context(self.matrix.reader())
            if len(groups) > 1:  # one BLAS thread per search thread, as in ExactIndex
                stack.enter_context(_blas_controller().limit(limits=1, user_api="blas"))
            pipeline = _Pipeline(len(blocks), len(buffers), len(groups))
            pipeline.run(
                lambda number: load(number, reader),
                lambda group, number, loaded: search_group(group, loaded[0], blocks[number][0], loaded[1]),
                lambda number: on_rows(blocks[number][1] - blocks[number][0]) if on_rows is not None else None,
            )
        exact_kernels.drain(values, ranks, cols, sizes, indices, scores)

    def search_ids(self, queries: np.ndarray, top_k: int) -> list[list[tuple[str, float]]]:
        """Like `search`, with document ids and Python floats, best first."""
        indices, scores = self.search(queries, top_k)
        return [
            [(self.ids[i], float(s)) for i, s in zip(row_i, row_s)]
            for row_i, row_s in zip(indices.tolist(), scores.tolist())
        ]

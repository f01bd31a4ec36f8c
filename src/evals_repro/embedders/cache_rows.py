"""Where the rows of one item list go while the cache assembles it: memory, or straight to disk.

Kept apart from the store (`cache.py`) because it is the one place that decides, from the first
chunk's dimension, whether a list fits in `ram_limit` bytes; past it the rows are written into the
list's matrix file as they arrive (`evals_repro.base.matrix_file`), so a corpus larger than memory is
embedded and cached without ever being held whole.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..base.errors import ProviderError
from ..base.matrix_file import MatrixFile, MatrixWriter


class ListRows:
    """The rows of one item list, decided when the first chunk tells the dimension: a matrix in
    memory or, past `ram_limit` bytes, the list's matrix file (`spill`)."""

    def __init__(self, count: int, embedder: str, spill: Path | None = None, ram_limit: int | None = None):
        self.count = count
        self.embedder = embedder
        self.spill = spill
        self.ram_limit = ram_limit
        self.dimension: int | None = None
        self._matrix: np.ndarray | None = None
        self._writer: MatrixWriter | None = None

    def _open(self, dimension: int) -> None:
        if self.dimension is None:
            self.dimension = dimension
            if self.ram_limit is not None and self.spill is not None and self.count * dimension * 4 > self.ram_limit:
                self._writer = MatrixWriter(self.spill, self.count, dimension)
            else:
                self._matrix = np.empty((self.count, dimension), dtype=np.float32)
        elif dimension != self.dimension:
            raise ProviderError(
                f"embedder {self.embedder} returned dimension {dimension}, earlier vectors have {self.dimension}",
                "clear this method's embedding cache if the model settings changed",
            )

    def slot(self, start: int, count: int, dimension: int) -> np.ndarray:
        """A writable (count, dimension) array to read rows start... into: their place in the
        matrix, or a scratch array for the matrix file (then `place` them)."""
        self._open(dimension)
        if self._matrix is not None:
            return self._matrix[start : start + count]
        return np.empty((count, dimension), dtype=np.float32)

    def place(self, start: int, vectors: np.ndarray) -> None:
        self._open(vectors.shape[1])
        if self._writer is not None:
            self._writer.place(start, vectors)
        elif self._matrix is not None:
            target = self._matrix[start : start + len(vectors)]
            if not np.may_share_memory(target, vectors):  # rows read in place are there already
                target[:] = vectors

    def finish(self) -> np.ndarray | MatrixFile:
        if self._writer is not None:
            return self._writer.finish()
        return self._matrix if self._matrix is not None else np.zeros((0, 0), dtype=np.float32)

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.abort()

"""Rows of completed provider requests, kept until their chunks are written (`partial/` in the cache).

An embedder that reports each request's rows as it completes (`ApiEmbedder.embed(..., on_rows=...)`)
has them written here at once, so a kill in the middle of a call that spans many requests never
pays twice for the completed ones; the next run takes them back by item digest. See `cache.py`.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..base.io import atomic_write_bytes
from .base import Embedder
from .chunk_file import FORMAT

_PARTIAL_MAGIC = b"evals-repro-partial-embeddings\n"


def encode_partial(digests: list[bytes], matrix: np.ndarray) -> bytes:
    """A partial file: the rows of one completed request, with the digests of the items they embed."""
    data = np.ascontiguousarray(matrix, dtype=np.float32).tobytes()
    header = {
        "format": FORMAT,
        "rows": int(matrix.shape[0]),
        "dimension": int(matrix.shape[1]),
        "dtype": "float32",
        "checksum": hashlib.blake2b(data, digest_size=16).hexdigest(),
        "items": [digest.hex() for digest in digests],
    }
    return _PARTIAL_MAGIC + json.dumps(header).encode() + b"\n" + data


def decode_partial(blob: bytes) -> tuple[list[bytes], np.ndarray]:
    """Parse a partial file into (item digests, rows); ValueError says what is wrong with it."""
    if not blob.startswith(_PARTIAL_MAGIC):
        raise ValueError("not a partial embeddings file")
    end = blob.find(b"\n", len(_PARTIAL_MAGIC))
    if end < 0:
        raise ValueError("truncated header")
    try:
        header = json.loads(blob[len(_PARTIAL_MAGIC) : end])
        digests = [bytes.fromhex(d) for d in header["items"]]
        rows, dimension = int(header["rows"]), int(header["dimension"])
        checksum = header["checksum"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"bad header ({exc})") from None
    if len(digests) != rows:
        raise ValueError(f"{len(digests)} item digests for {rows} rows")
    data = memoryview(blob)[end + 1 :]
    if len(data) != rows * dimension * 4:
        raise ValueError(f"{len(data)} data bytes, expected {rows * dimension * 4} (truncated?)")
    if hashlib.blake2b(data, digest_size=16).hexdigest() != checksum:
        raise ValueError("checksum mismatch")
    matrix = np.frombuffer(data, dtype=np.float32).reshape(rows, dimension)
    if not np.isfinite(matrix).all():
        raise ValueError("non-finite values")
    return digests, matrix


def reports_rows(embedder: Embedder) -> bool:
    """Whether `embedder.embed` takes `on_rows` (API embedders report each request as it completes)."""
    try:
        return "on_rows" in inspect.signature(embedder.embed).parameters
    except (TypeError, ValueError):
        return False


class PartialRows:
    """Rows of completed requests under one settings digest: written as they arrive, read on resume."""

    def __init__(self, folder: Path, warn: Callable[[Path, str], None], repair: bool = True):
        self.folder = folder
        self.warn = warn
        self.repair = repair  # delete an unreadable file (a plan reads only: it skips it)
        self._known: dict[bytes, np.ndarray] | None = None
        self._files: dict[Path, list[bytes]] = {}
        self._lock = threading.Lock()

    def known(self) -> dict[bytes, np.ndarray]:
        """item digest -> unit row, from every readable partial file (read once)."""
        if self._known is None:
            self._known = {}
            for path in sorted(self.folder.glob("*.emb")) if self.folder.is_dir() else []:
                try:
                    digests, matrix = decode_partial(path.read_bytes())
                except (OSError, ValueError) as exc:
                    self.warn(path, str(exc))
                    if self.repair:
                        path.unlink(missing_ok=True)
                    continue
                self._files[path] = digests
                for digest, row in zip(digests, matrix):
                    self._known[digest] = row
        return self._known

    def writer(self, digests: list[bytes]) -> Callable[[list[int], np.ndarray], None]:
        """An `on_rows` callback for a call embedding items with these digests, in order."""

        def write(positions: list[int], rows: np.ndarray) -> None:
            chosen = [digests[p] for p in positions]
            key = hashlib.blake2b(b"".join(chosen), digest_size=20).hexdigest()
            path = self.folder / f"{key}.emb"
            atomic_write_bytes(path, encode_partial(chosen, rows))
            with self._lock:
                self._files[path] = chosen

        return write

    def forget(self, covered: set[bytes]) -> None:
        """Delete the partial files whose every row now sits in a written chunk."""
        with self._lock:
            done = [path for path, digests in self._files.items() if set(digests) <= covered]
            for path in done:
                path.unlink(missing_ok=True)
                del self._files[path]

"""The embedding cache's chunk files: one JSON header line, then the raw float32 rows.

Header: format, rows, dimension, dtype, and the checksum of the data, xxh3-128 (`hash`) or, in
files written before it, blake2b. Only finite rows are written, so a verified xxh3 checksum
implies finite rows; older files are checked for non-finite values when read. `read_chunk`
reads the rows straight into their final place (one copy from the page cache).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..base.matrix_file import digest as xxh3_digest
from ..base.matrix_file import pread_into

FORMAT = 1  # also part of every cache key (cache_keys.settings_digest): changing it re-keys every cache
_MAGIC = b"evals-repro-embeddings\n"


def encode(matrix: np.ndarray) -> bytes:
    """A chunk file's bytes. Only finite rows are written, so a verified checksum implies finite rows."""
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    if not np.isfinite(matrix).all():
        raise ValueError("refusing to cache non-finite embeddings")
    data = matrix.tobytes()
    header = {
        "format": FORMAT,
        "rows": int(matrix.shape[0]),
        "dimension": int(matrix.shape[1]),
        "dtype": "float32",
        "hash": "xxh3_128",
        "checksum": xxh3_digest(data).hex(),
    }
    return _MAGIC + json.dumps(header).encode() + b"\n" + data


def _parse_header(line: bytes, rows: int) -> tuple[tuple[int, int], str, str]:
    """(shape, hash name, checksum) from a chunk file's header line; ValueError when it is bad."""
    try:
        header = json.loads(line)
        shape = (int(header["rows"]), int(header["dimension"]))
        checksum = str(header["checksum"])
        algorithm = str(header.get("hash", "blake2b"))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"bad header ({exc})") from None
    if algorithm not in ("xxh3_128", "blake2b") or header.get("dtype", "float32") != "float32":
        raise ValueError(f"bad header (hash {algorithm}, dtype {header.get('dtype')})")
    if shape[0] != rows:
        raise ValueError(f"{shape[0]} rows, expected {rows}")
    if shape[1] < 1:
        raise ValueError(f"dimension {shape[1]}")
    return shape, algorithm, checksum


def _verify(rows: np.ndarray, algorithm: str, checksum: str) -> None:
    data = memoryview(rows).cast("B")
    actual = xxh3_digest(data).hex() if algorithm == "xxh3_128" else hashlib.blake2b(data, digest_size=16).hexdigest()
    if actual != checksum:
        raise ValueError("checksum mismatch")
    # xxh3 files come from `encode`, which writes finite rows only; older files are checked.
    if algorithm != "xxh3_128" and not np.isfinite(rows).all():
        raise ValueError("non-finite values")


def decode(blob: bytes, rows: int) -> np.ndarray:
    """Parse an `.emb` file; ValueError says what is wrong with it."""
    if not blob.startswith(_MAGIC):
        raise ValueError("not an embeddings file")
    end = blob.find(b"\n", len(_MAGIC))
    if end < 0:
        raise ValueError("truncated header")
    shape, algorithm, checksum = _parse_header(blob[len(_MAGIC) : end], rows)
    data = memoryview(blob)[end + 1 :]
    if len(data) != shape[0] * shape[1] * 4:
        raise ValueError(f"{len(data)} data bytes, expected {shape[0] * shape[1] * 4} (truncated?)")
    matrix = np.frombuffer(data, dtype=np.float32).reshape(shape)
    _verify(matrix, algorithm, checksum)
    return matrix


def read_chunk(path: Path, rows: int, slot: Callable[[int], np.ndarray]) -> np.ndarray:
    """Read a chunk file's rows straight into `slot(dimension)` (a writable (rows, dimension)
    float32 array) and verify them: one copy, from the page cache to their final place.
    FileNotFoundError when there is no such file; ValueError says what is wrong with it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        head = os.pread(fd, 1024, 0)
        if not head.startswith(_MAGIC):
            raise ValueError("not an embeddings file")
        end = head.find(b"\n", len(_MAGIC))
        if end < 0:
            head = os.pread(fd, 1 << 16, 0)
            end = head.find(b"\n", len(_MAGIC))
            if end < 0:
                raise ValueError("truncated header")
        shape, algorithm, checksum = _parse_header(head[len(_MAGIC) : end], rows)
        nbytes = shape[0] * shape[1] * 4
        if size - end - 1 != nbytes:
            raise ValueError(f"{size - end - 1} data bytes, expected {nbytes} (truncated?)")
        out = slot(shape[1])
        done = pread_into(fd, memoryview(out).cast("B"), end + 1)
        if done != nbytes:
            raise ValueError(f"{done} data bytes, expected {nbytes} (truncated?)")
    finally:
        os.close(fd)
    _verify(out, algorithm, checksum)
    return out

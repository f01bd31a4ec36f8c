"""Embedding cache: never pay twice for a vector, even when a run dies mid-corpus.

Layout, under `<cache_dir>/embeddings/<benchmark>/<method>/`:

- `chunks/<chunk key>.emb`: the vectors of one chunk of consecutive items. The key digests the
  model settings (`embedder.describe()`: model, dimension, prompts), the input type and the
  chunk's items (text, title, image bytes). Each chunk is written atomically as soon as it is
  embedded, so a killed run keeps everything it paid for and the next run embeds only the rest.
- `<list key>.json`: the manifest of one complete item list (key = settings + input type +
  every item): item count, dimension and its chunk keys in order. A run whose list is
  unchanged reads the manifest and its chunks and makes no embedding call at all.

Chunk boundaries are content-defined (a chunk closes after an item whose digest hits a
fixed pattern, or at `max_chunk` items), so editing, inserting or deleting a page changes
only the chunk around it: the rest of the corpus is still found by key.

- `partial/<settings digest>/<rows key>.emb`: the rows of one completed provider request whose
  chunks are not written yet. An embedder that reports rows per request (`ApiEmbedder.embed(...,
  on_rows=...)`) has each request's rows written here the moment it completes, so a kill in the
  middle of a call that spans many requests never pays twice for the completed ones: the next run
  takes those rows from here, sends only the rest, writes the chunks and deletes the partial files
  they cover. Partial files name their items by digest, so they are found whatever the chunking.

A `.emb` file is one JSON header line (rows, dimension, dtype, blake2b checksum of the data)
followed by the raw float32 rows (partial files add `items`, the item digests, to the header). A
file that is truncated, has the wrong shape or checksum, or holds non-finite values is reported
with a warning line and embedded again; a damaged manifest is rebuilt from the chunks. Counts go
to `usage`: cache_hits and cache_misses (items; rows taken from partial files count as hits and
as cache_resumed) and embedded_items.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ProviderError
from ..io import atomic_write_bytes, atomic_write_json
from ..usage import Usage
from .base import Embedder, EmbedItem, InputType

log = logging.getLogger(__name__)

FORMAT = 1
_MAGIC = b"evals-repro-embeddings\n"
_PARTIAL_MAGIC = b"evals-repro-partial-embeddings\n"
PARTIAL_DIR = "partial"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", name) or "_"


def item_digest(item: EmbedItem) -> bytes:
    """Digest of everything an embedding is computed from."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (item.text, item.title):
        digest.update(b"\0" if part is None else b"\1" + part.encode("utf-8"))
        digest.update(b"\xff")
    digest.update(b"\0" if item.image is None else b"\1" + hashlib.blake2b(item.image, digest_size=16).digest())
    return digest.digest()


def settings_digest(embedder: Embedder, input_type: InputType) -> bytes:
    described = json.dumps(embedder.describe(), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(f"{FORMAT}\0{described}\0{input_type}".encode(), digest_size=16).digest()


def chunk_bounds(digests: list[bytes], average: int, max_chunk: int) -> Iterator[tuple[int, int]]:
    """Content-defined chunks: close after an item whose digest is 0 mod `average`, or at `max_chunk`."""
    start = 0
    for index, digest in enumerate(digests):
        size = index + 1 - start
        if size >= max_chunk or int.from_bytes(digest[:8], "little") % average == 0:
            yield start, index + 1
            start = index + 1
    if start < len(digests):
        yield start, len(digests)


def encode(matrix: np.ndarray) -> bytes:
    data = np.ascontiguousarray(matrix, dtype=np.float32).tobytes()
    header = {
        "format": FORMAT,
        "rows": int(matrix.shape[0]),
        "dimension": int(matrix.shape[1]),
        "dtype": "float32",
        "checksum": hashlib.blake2b(data, digest_size=16).hexdigest(),
    }
    return _MAGIC + json.dumps(header).encode() + b"\n" + data


def decode(blob: bytes, rows: int) -> np.ndarray:
    """Parse an `.emb` file; ValueError says what is wrong with it."""
    if not blob.startswith(_MAGIC):
        raise ValueError("not an embeddings file")
    end = blob.find(b"\n", len(_MAGIC))
    if end < 0:
        raise ValueError("truncated header")
    try:
        header = json.loads(blob[len(_MAGIC) : end])
        shape = (int(header["rows"]), int(header["dimension"]))
        checksum = header["checksum"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"bad header ({exc})") from None
    if shape[0] != rows:
        raise ValueError(f"{shape[0]} rows, expected {rows}")
    data = memoryview(blob)[end + 1 :]
    if len(data) != shape[0] * shape[1] * 4:
        raise ValueError(f"{len(data)} data bytes, expected {shape[0] * shape[1] * 4} (truncated?)")
    if hashlib.blake2b(data, digest_size=16).hexdigest() != checksum:
        raise ValueError("checksum mismatch")
    matrix = np.frombuffer(data, dtype=np.float32).reshape(shape)
    if not np.isfinite(matrix).all():
        raise ValueError("non-finite values")
    return matrix


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


def _reports_rows(embedder: Embedder) -> bool:
    """Whether `embedder.embed` takes `on_rows` (API embedders report each request as it completes)."""
    try:
        return "on_rows" in inspect.signature(embedder.embed).parameters
    except (TypeError, ValueError):
        return False


class _PartialRows:
    """Rows of completed requests under one settings digest: written as they arrive, read on resume."""

    def __init__(self, folder: Path, warn: Callable[[Path, str], None]):
        self.folder = folder
        self.warn = warn
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


class EmbeddingCache:
    """Embeds item lists through an embedder, reusing every chunk ever computed for them.

    Missing chunks are sent to the embedder together, `call_size` items per call (the provider
    splits further by its own limits), and each chunk is written as soon as its call returns.
    """

    def __init__(
        self,
        root: Path,
        embedder: Embedder,
        usage: Usage | None = None,
        call_size: int = 256,
        average_chunk: int = 32,
        max_chunk: int = 128,
    ):
        self.root = Path(root)
        self.embedder = embedder
        self.usage = usage if usage is not None else Usage()
        self.call_size = max(1, call_size)
        self.average_chunk = average_chunk
        self.max_chunk = max_chunk

    @classmethod
    def for_method(
        cls, cache_dir: Path, benchmark: str, method: str, embedder: Embedder, usage: Usage | None = None, **kwargs: Any
    ) -> EmbeddingCache:
        root = Path(cache_dir) / "embeddings" / _safe(benchmark) / _safe(method)
        return cls(root, embedder, usage, **kwargs)

    def _warn(self, path: Path, problem: str) -> None:
        log.warning(f"embedding cache file {path} is damaged ({problem}); embedding it again")
        self.usage.add("cache_damaged")

    def _chunk_path(self, key: str) -> Path:
        return self.root / "chunks" / key[:2] / f"{key}.emb"

    def embed(
        self, items: list[EmbedItem], input_type: InputType, on_progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """One unit row per item, in order: from the cache where possible, else embedded and cached."""
        settings = settings_digest(self.embedder, input_type)
        digests = [item_digest(item) for item in items]
        list_key = hashlib.blake2b(settings + b"".join(digests), digest_size=20).hexdigest()
        manifest_path = self.root / f"{input_type}-{list_key}.json"
        bounds = list(chunk_bounds(digests, self.average_chunk, self.max_chunk))
        keys = [hashlib.blake2b(settings + b"".join(digests[a:b]), digest_size=20).hexdigest() for a, b in bounds]
        self._check_manifest(manifest_path, len(items), keys)
        rows = _Rows(len(items), self.embedder.name)
        partial = _PartialRows(self.root / PARTIAL_DIR / settings.hex(), self._warn)
        pending: list[tuple[int, int, str]] = []
        for (start, stop), key in zip(bounds, keys):
            cached = self._load(key, stop - start)
            if cached is not None:
                rows.place(start, cached)
                if on_progress is not None:
                    on_progress(stop - start)
                continue
            pending.append((start, stop, key))
            if sum(b - a for a, b, _ in pending) >= self.call_size:
                self._embed_chunks(items, digests, partial, pending, input_type, rows, on_progress)
                pending = []
        if pending:
            self._embed_chunks(items, digests, partial, pending, input_type, rows, on_progress)
        matrix = rows.matrix
        atomic_write_json(
            manifest_path,
            {
                "format": FORMAT,
                "embedder": self.embedder.describe(),
                "input_type": input_type,
                "items": len(items),
                "dimension": int(matrix.shape[1]),
                "chunks": keys,
            },
        )
        return matrix

    def _check_manifest(self, path: Path, count: int, keys: list[str]) -> None:
        """A manifest that disagrees with the item list it is named after is reported (and rewritten)."""
        if not path.exists():
            return
        try:
            manifest = json.loads(path.read_text("utf-8"))
            if manifest["items"] != count or manifest["chunks"] != keys:
                raise ValueError("item count or chunks differ from its key")
        except (ValueError, KeyError, TypeError) as exc:
            self._warn(path, str(exc))

    def _load(self, key: str, count: int) -> np.ndarray | None:
        path = self._chunk_path(key)
        if not path.exists():
            return None
        try:
            vectors = decode(path.read_bytes(), count)
        except ValueError as exc:
            self._warn(path, str(exc))
            return None
        self.usage.add("cache_hits", count)
        return vectors

    def _embed_chunks(
        self,
        items: list[EmbedItem],
        digests: list[bytes],
        partial: _PartialRows,
        chunks: list[tuple[int, int, str]],
        input_type: InputType,
        rows: _Rows,
        on_progress: Callable[[int], None] | None,
    ) -> None:
        """Embed the items of these chunks (minus rows an interrupted run already paid for), write the chunks."""
        positions = [p for start, stop, _ in chunks for p in range(start, stop)]
        known = partial.known()
        vectors: dict[int, np.ndarray] = {p: known[digests[p]] for p in positions if digests[p] in known}
        send = [p for p in positions if p not in vectors]
        if vectors:
            self.usage.add("cache_hits", len(vectors))
            self.usage.add("cache_resumed", len(vectors))
        if send:
            batch = [items[p] for p in send]
            if _reports_rows(self.embedder):
                # Each request's rows go to a partial file the moment it completes: a kill later in
                # this call keeps them.
                writer = partial.writer([digests[p] for p in send])
                result = self.embedder.embed(batch, input_type, on_rows=writer)  # type: ignore[call-arg]
            else:
                result = self.embedder.embed(batch, input_type)
            matrix = np.asarray(result, dtype=np.float32)
            if matrix.ndim != 2 or matrix.shape[0] != len(batch) or not np.isfinite(matrix).all():
                raise ProviderError(
                    f"embedder {self.embedder.name} returned shape {matrix.shape} "
                    f"(or non-finite values) for {len(batch)} items",
                    "the embedder broke its contract; no vector was cached from this call",
                )
            self.usage.add("cache_misses", len(batch))
            self.usage.add("embedded_items", len(batch))
            vectors.update(zip(send, matrix))
        covered: set[bytes] = set()
        for start, stop, key in chunks:
            part = np.vstack([vectors[p] for p in range(start, stop)]).astype(np.float32, copy=False)
            atomic_write_bytes(self._chunk_path(key), encode(part))
            covered.update(digests[start:stop])
            rows.place(start, part)
            if on_progress is not None:
                on_progress(stop - start)
        partial.forget(covered)


class _Rows:
    """The output matrix, allocated once the first chunk tells the dimension."""

    def __init__(self, count: int, embedder: str):
        self.count = count
        self.embedder = embedder
        self._matrix: np.ndarray | None = None

    def place(self, start: int, vectors: np.ndarray) -> None:
        if self._matrix is None:
            self._matrix = np.empty((self.count, vectors.shape[1]), dtype=np.float32)
        elif vectors.shape[1] != self._matrix.shape[1]:
            raise ProviderError(
                f"embedder {self.embedder} returned dimension {vectors.shape[1]}, "
                f"earlier vectors have {self._matrix.shape[1]}",
                "clear this method's embedding cache if the model settings changed",
            )
        self._matrix[start : start + len(vectors)] = vectors

    @property
    def matrix(self) -> np.ndarray:
        return self._matrix if self._matrix is not None else np.zeros((0, 0), dtype=np.float32)

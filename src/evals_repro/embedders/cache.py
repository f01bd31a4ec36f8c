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

- `<list key>.npy`: for a large list (a matrix of PACK_MIN_BYTES or more, or past the
  `ram_limit` of `embed_matrix`), its whole matrix as one matrix file (`evals_repro.matrix_file`:
  the .npy layout, one checksummed segment per chunk). The next load is one sequential read
  instead of a file per chunk; past the RAM limit the file is not loaded at all but searched from
  disk block by block (`StreamedExactIndex`), and it is written from the chunks without ever
  holding the matrix in memory. It is derived data (it doubles the disk used by that list):
  deleting it costs one rebuild from the chunks.

- `partial/<settings digest>/<rows key>.emb`: the rows of one completed provider request whose
  chunks are not written yet. An embedder that reports rows per request (`ApiEmbedder.embed(...,
  on_rows=...)`) has each request's rows written here the moment it completes, so a kill in the
  middle of a call that spans many requests never pays twice for the completed ones: the next run
  takes those rows from here, sends only the rest, writes the chunks and deletes the partial files
  they cover. Partial files name their items by digest, so they are found whatever the chunking.

A `.emb` file is one JSON header line (rows, dimension, dtype, checksum of the data: xxh3-128,
or blake2b in files written before it) followed by the raw float32 rows, which are read straight
into the output matrix (partial files add `items`, the item digests, to the header). A file that
is truncated, has the wrong shape or checksum, or holds non-finite values is reported with a
warning line and embedded again (a damaged matrix file is rebuilt from the chunks); a damaged
manifest is rebuilt from the chunks. Counts go to `usage`: cache_hits and cache_misses (items;
rows taken from partial files count as hits and as cache_resumed) and embedded_items.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..errors import ProviderError
from ..io import atomic_write_bytes, atomic_write_json
from ..matrix_file import MatrixDamaged, MatrixFile, MatrixWriter
from ..providers.plan import Plan
from ..usage import Usage
from .base import Embedder, EmbedItem, InputType
from .chunk_file import _MAGIC as _MAGIC
from .chunk_file import FORMAT as FORMAT
from .chunk_file import decode as decode
from .chunk_file import encode as encode
from .chunk_file import read_chunk
from .partial_rows import PartialRows, reports_rows

log = logging.getLogger(__name__)

# A list whose matrix takes this much is also saved as one matrix file: loading ~30k small chunk
# files per GiB costs several times one sequential read.
PACK_MIN_BYTES = 256 << 20
PARTIAL_DIR = "partial"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", name) or "_"


def item_digest(item: EmbedItem) -> bytes:
    """Digest of everything an embedding is computed from: blake2b-128 of, for text and title,
    0x00 (absent) or 0x01 + UTF-8, each closed by 0xff; then 0x00, or 0x01 + the image's blake2b-128.
    (One call over the joined bytes: a million items are digested on every cached run.)"""
    text, title, image = item.text, item.title, item.image
    data = (
        (b"\0\xff" if text is None else b"\1" + text.encode("utf-8") + b"\xff")
        + (b"\0\xff" if title is None else b"\1" + title.encode("utf-8") + b"\xff")
        + (b"\0" if image is None else b"\1" + hashlib.blake2b(image, digest_size=16).digest())
    )
    return hashlib.blake2b(data, digest_size=16).digest()


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


class Lookup(NamedTuple):
    """One item list's place in the cache."""

    settings: bytes
    digests: list[bytes]
    manifest: Path
    bounds: list[tuple[int, int]]
    keys: list[str]


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
        pack_min_bytes: int = PACK_MIN_BYTES,
    ):
        self.root = Path(root)
        self.embedder = embedder
        self.usage = usage if usage is not None else Usage()
        self.call_size = max(1, call_size)
        self.average_chunk = average_chunk
        self.max_chunk = max_chunk
        self.pack_min_bytes = pack_min_bytes

    @classmethod
    def for_method(
        cls, cache_dir: Path, benchmark: str, method: str, embedder: Embedder, usage: Usage | None = None, **kwargs: Any
    ) -> EmbeddingCache:
        root = Path(cache_dir) / "embeddings" / _safe(benchmark) / _safe(method)
        return cls(root, embedder, usage, **kwargs)

    def _warn(self, path: Path, problem: str, action: str = "embedding it again") -> None:
        log.warning(f"embedding cache file {path} is damaged ({problem}); {action}")
        self.usage.add("cache_damaged")

    def _chunk_path(self, key: str) -> Path:
        return self.root / "chunks" / key[:2] / f"{key}.emb"

    def embed(
        self, items: list[EmbedItem], input_type: InputType, on_progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """One unit row per item, in order: from the cache where possible, else embedded and cached."""
        matrix = self.embed_matrix(items, input_type, on_progress)
        assert isinstance(matrix, np.ndarray)
        return matrix

    def embed_matrix(
        self,
        items: list[EmbedItem],
        input_type: InputType,
        on_progress: Callable[[int], None] | None = None,
        ram_limit: int | None = None,
        lookup: Lookup | None = None,
    ) -> np.ndarray | MatrixFile:
        """Like `embed`; but a list whose float32 matrix takes more than `ram_limit` bytes comes
        back as its matrix file, written from the chunks (and new embeddings) without ever
        holding the matrix in memory, or found already written and structurally sound (its rows
        are verified as they are read). `lookup`: this list's keys, when already computed."""
        looked_up = lookup if lookup is not None else self.lookup(items, input_type)
        manifest_path, bounds, keys = looked_up.manifest, looked_up.bounds, looked_up.keys
        manifest_sound = self._check_manifest(manifest_path, len(items), keys)
        matrix_path = manifest_path.with_suffix(".npy")
        matrix = self._from_matrix_file(matrix_path, len(items), ram_limit)
        if matrix is not None:
            if on_progress is not None:
                on_progress(len(items))
        else:
            matrix = self._from_chunks(items, input_type, looked_up, matrix_path, ram_limit, on_progress)
            if isinstance(matrix, np.ndarray) and matrix.nbytes >= self.pack_min_bytes:
                self._write_matrix_file(matrix_path, matrix, bounds)
        if manifest_sound:  # a cached run rewrites (and fsyncs) nothing
            return matrix
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

    def _from_chunks(self, items, input_type, looked_up: Lookup, matrix_path, ram_limit, on_progress):
        """The list's rows from its chunk files, embedding (and caching) the missing chunks."""
        digests, bounds, keys = looked_up.digests, looked_up.bounds, looked_up.keys
        rows = _Rows(len(items), self.embedder.name, matrix_path, ram_limit)
        partial = PartialRows(self.root / PARTIAL_DIR / looked_up.settings.hex(), self._warn)
        try:
            pending: list[tuple[int, int, str]] = []
            for (start, stop), key in zip(bounds, keys):
                if self._load(key, start, stop - start, rows):
                    if on_progress is not None:
                        on_progress(stop - start)
                    continue
                pending.append((start, stop, key))
                if sum(b - a for a, b, _ in pending) >= self.call_size:
                    self._embed_chunks(items, digests, partial, pending, input_type, rows, on_progress)
                    pending = []
            if pending:
                self._embed_chunks(items, digests, partial, pending, input_type, rows, on_progress)
            return rows.finish()
        except BaseException:
            rows.abort()
            raise

    def _from_matrix_file(self, path: Path, count: int, ram_limit: int | None) -> np.ndarray | MatrixFile | None:
        """The list's matrix file itself past `ram_limit`, else its rows loaded (each chunk's
        checksum verified): one sequential read instead of a file per chunk. None when there is
        no sound file (a damaged one is reported and deleted)."""
        packed = self._open_matrix(path, count)
        if packed is None:
            return None
        if ram_limit is None or packed.nbytes <= ram_limit:
            try:
                loaded = packed.load()
            except MatrixDamaged as exc:
                self.discard(path, exc.problem)
                return None
            self.usage.add("cache_hits", count)
            return loaded
        self.usage.add("cache_hits", count)
        return packed

    def _write_matrix_file(self, path: Path, matrix: np.ndarray, bounds: list[tuple[int, int]]) -> None:
        """Save a large list's matrix as one file (a segment per chunk) for fast loads next time.
        A failure (disk full) only costs the speed-up: it is reported and the run goes on."""
        try:
            with MatrixWriter(path, matrix.shape[0], matrix.shape[1]) as writer:
                if path.exists():  # another process wrote it while we waited for its lock
                    writer.abort()
                    return
                for start, stop in bounds:
                    writer.place(start, matrix[start:stop])
                writer.finish()
        except OSError as exc:
            log.warning(
                f"could not write the embedding cache's matrix file {path} ({exc}); the next run loads the chunks"
            )

    def lookup(self, items: list[EmbedItem], input_type: InputType) -> Lookup:
        """Where the list's vectors live: its manifest path, chunk bounds and chunk keys (from
        the digest of every item: ~1 us per item, the whole cost of a cache hit besides reading)."""
        settings = settings_digest(self.embedder, input_type)
        digests = [item_digest(item) for item in items]
        list_key = hashlib.blake2b(settings + b"".join(digests), digest_size=20).hexdigest()
        bounds = list(chunk_bounds(digests, self.average_chunk, self.max_chunk))
        keys = [hashlib.blake2b(settings + b"".join(digests[a:b]), digest_size=20).hexdigest() for a, b in bounds]
        return Lookup(settings, digests, self.root / f"{input_type}-{list_key}.json", bounds, keys)

    def cached(self, items: list[EmbedItem], input_type: InputType) -> bool:
        """Whether every chunk of this list is on disk (embedding it would call nothing)."""
        return all(self._chunk_path(key).exists() for key in self.lookup(items, input_type).keys)

    def plan(self, items: list[EmbedItem], input_type: InputType, plan: Plan, what: str = "") -> None:
        """Count what `embed(items)` would send: the items of missing chunks (minus rows an interrupted run
        already paid for), in the same calls of `call_size` items; held items are counted as held.
        Reads only: nothing is written, repaired or deleted."""
        if getattr(self.embedder, "plan", None) is None:
            return  # a local embedder: computed here, nothing paid
        looked = self.lookup(items, input_type)
        provider = getattr(self.embedder, "provider", "") or "local"
        model = getattr(self.embedder, "model", self.embedder.name)
        kind = what or ("queries" if input_type == "query" else "documents")
        if self._sound_matrix(looked.manifest.with_suffix(".npy"), len(items)):
            plan.add(provider, model, kind, held=len(items))
            return
        known = PartialRows(self.root / PARTIAL_DIR / looked.settings.hex(), lambda path, problem: None)
        pending: list[int] = []
        held = 0

        def flush() -> None:
            nonlocal held
            send = [p for p in pending if looked.digests[p] not in known.known()]
            held += len(pending) - len(send)
            if send:
                self.embedder.plan([items[p] for p in send], input_type, plan, kind)  # type: ignore[attr-defined]

        for (start, stop), key in zip(looked.bounds, looked.keys):
            if self._chunk_path(key).exists():
                held += stop - start
                continue
            pending.extend(range(start, stop))
            if len(pending) >= self.call_size:
                flush()
                pending = []
        if pending:
            flush()
        plan.add(provider, model, kind, held=held)

    def _sound_matrix(self, path: Path, count: int) -> bool:
        """A matrix file that opens with the right rows and chunk checksums (checked without repairing)."""
        if not path.exists():
            return False
        try:
            packed = MatrixFile.open(path)
        except MatrixDamaged:
            return False
        return packed.rows == count and packed.segments is not None

    def _open_matrix(self, path: Path, count: int) -> MatrixFile | None:
        """The list's matrix file when it is there and sound (header, trailer, size, one segment per chunk)."""
        if not path.exists():
            return None
        try:
            packed = MatrixFile.open(path)
            if packed.rows != count:
                raise MatrixDamaged(path, f"{packed.rows} rows, expected {count}")
            if packed.segments is None:
                raise MatrixDamaged(path, "no chunk checksums")
        except MatrixDamaged as exc:
            self.discard(path, exc.problem)
            return None
        return packed

    def discard(self, path: Path, problem: str) -> None:
        """Report a damaged matrix file and delete it: the next `embed_matrix` rebuilds it from the chunks."""
        self._warn(path, problem, "rebuilding it from the chunks")
        Path(path).unlink(missing_ok=True)

    def _check_manifest(self, path: Path, count: int, keys: list[str]) -> bool:
        """Is the manifest there and in agreement with the item list it is named after? One that
        disagrees is reported (and rewritten)."""
        if not path.exists():
            return False
        try:
            manifest = json.loads(path.read_text("utf-8"))
            if manifest["items"] != count or manifest["chunks"] != keys:
                raise ValueError("item count or chunks differ from its key")
        except (ValueError, KeyError, TypeError) as exc:
            self._warn(path, str(exc))
            return False
        return True

    def _load(self, key: str, start: int, count: int, rows: _Rows) -> bool:
        """Read a cached chunk into rows[start : start + count]; False when it is absent or damaged."""
        path = self._chunk_path(key)
        try:
            vectors = read_chunk(path, count, lambda dimension: rows.slot(start, count, dimension))
        except FileNotFoundError:
            return False
        except ValueError as exc:
            self._warn(path, str(exc))
            return False
        rows.place(start, vectors)
        self.usage.add("cache_hits", count)
        return True

    def _embed_chunks(
        self,
        items: list[EmbedItem],
        digests: list[bytes],
        partial: PartialRows,
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
            if reports_rows(self.embedder):
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
    """Where the rows of one item list go, decided when the first chunk tells the dimension: a
    matrix in memory or, past `ram_limit` bytes, the list's matrix file (`spill`)."""

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

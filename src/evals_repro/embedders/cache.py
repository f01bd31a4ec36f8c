"""Embedding cache: never pay twice for a vector, even when a run dies mid-corpus.

Layout, under `<cache_dir>/embeddings/<benchmark>/<method>/`:

- `chunks/<chunk key>.emb`: the vectors of one chunk of consecutive items (the keys and the
  content-defined chunk boundaries: `cache_keys.py`). Each chunk is written atomically as soon as it
  is embedded, so a killed run keeps everything it paid for and the next run embeds only the rest.
- `<list key>.json`: the manifest of one complete item list (key = settings + input type +
  every item): item count, dimension and its chunk keys in order. A run whose list is
  unchanged reads the manifest and its chunks and makes no embedding call at all.

- `<list key>.npy`: for a large list (a matrix of PACK_MIN_BYTES or more, or past the
  `ram_limit` of `embed_matrix`: `cache_rows.py`), its whole matrix as one matrix file (`evals_repro.base.matrix_file`:
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

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import ProviderError
from ..base.io import atomic_write_bytes, atomic_write_json
from ..base.matrix_file import MatrixDamaged, MatrixFile, MatrixWriter
from ..base.usage import Usage
from ..providers.plan import Plan
from .base import Embedder, EmbedItem, InputType
from .cache_keys import Lookup, lookup, safe_name
from .cache_rows import ListRows
from .chunk_file import FORMAT, encode, read_chunk
from .partial_rows import PartialRows, reports_rows

log = logging.getLogger(__name__)

# A list whose matrix takes this much is also saved as one matrix file: loading ~30k small chunk
# files per GiB costs several times one sequential read.
PACK_MIN_BYTES = 256 << 20
PARTIAL_DIR = "partial"


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
        root = Path(cache_dir) / "embeddings" / safe_name(benchmark) / safe_name(method)
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
        rows = ListRows(len(items), self.embedder.name, matrix_path, ram_limit)
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
        """Where the list's vectors live in this cache (`cache_keys.lookup`)."""
        return lookup(self.root, self.embedder, items, input_type, self.average_chunk, self.max_chunk)

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
        known = PartialRows(self.root / PARTIAL_DIR / looked.settings.hex(), lambda path, problem: None, repair=False)
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

    def _load(self, key: str, start: int, count: int, rows: ListRows) -> bool:
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
        rows: ListRows,
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

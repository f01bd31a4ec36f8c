"""Pages kept on disk: a corpus too large for a list of `Page` objects (MS MARCO's 8.8M passages).

8.8M `Page` objects cost ~6 GB of Python objects before BM25 tokenises anything. A `PageStore`
is a read-only `Sequence[Page]` over files written once, by streaming, from `(id, text)` pairs:

- `texts.bin`: the UTF-8 texts back to back, `text_offsets.npy`: n + 1 byte offsets (int64);
- `ids.npy`: page ids as fixed-width bytes in corpus order; `ids_sorted.npy` and `ids_order.npy`
  look an id up by binary search (no 8.8M-entry dict);
- `manifest.json`, written last: page count, the corpus fingerprint (the digest
  `Subset.fingerprint` gives for the same pages), duplicate and empty page ids (what
  `check_subset` reports, computed while writing).

The store is built in a temporary sibling directory and renamed into place, so a killed build
leaves nothing half-written; `<cache>/pages/<key>/` is keyed by the caller's description of the
source (repo and commit, or dataset id and file identity). Sequential reads (`iter_texts`) use plain
file reads, so streaming the corpus into BM25 does not map 3 GB of text into the process; random
reads (`store[i]`, `store.by_id()[page_id]`, what rerankers need) go through one shared mmap.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

from .data import Page
from .io import atomic_write_json, replace_directory, staging_directory

STORE_FORMAT = "1"
MANIFEST = "manifest.json"
_FILES = ("texts.bin", "text_offsets.npy", "ids.npy", "ids_sorted.npy", "ids_order.npy")
# Problem ids kept in the manifest per kind (check_subset shows counts and the first few).
_KEEP_IDS = 1000

# Open stores by directory, so two subsets that share a corpus (DL19 and DL20) share one object.
_OPEN: dict[Path, PageStore] = {}


def store_key(description: dict[str, Any]) -> str:
    """The cache folder name for a source description (any JSON-able dict)."""
    return hashlib.sha256(json.dumps(description, sort_keys=True).encode()).hexdigest()[:32]


class PageStore(Sequence[Page]):
    """A read-only corpus on disk; see the module docstring."""

    def __init__(self, directory: Path, manifest: dict[str, Any]):
        self.directory = Path(directory)
        self.manifest = manifest
        self._offsets = np.load(self.directory / "text_offsets.npy", mmap_mode="r")
        self._ids = np.load(self.directory / "ids.npy", mmap_mode="r")
        self._sorted: np.ndarray | None = None
        self._order: np.ndarray | None = None
        self._texts: mmap.mmap | bytes | None = None

    # -- facts recorded at build time --------------------------------------------------------
    @property
    def fingerprint(self) -> str:
        return str(self.manifest["fingerprint"])

    @property
    def duplicate_ids(self) -> list[str]:
        return list(self.manifest["duplicate_ids"])

    @property
    def empty_ids(self) -> list[str]:
        return list(self.manifest["empty_ids"])

    @property
    def n_empty(self) -> int:
        return int(self.manifest["n_empty"])

    @property
    def source(self) -> dict[str, Any]:
        return dict(self.manifest.get("source", {}))

    # -- Sequence[Page] ----------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.manifest["n_pages"])

    @overload
    def __getitem__(self, index: int) -> Page: ...

    @overload
    def __getitem__(self, index: slice) -> list[Page]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(index)
        return Page(self.page_id(index), self.text(index))

    def __iter__(self) -> Iterator[Page]:
        for ids, texts in self.iter_chunks():
            yield from (Page(pid, text) for pid, text in zip(ids, texts))

    def page_id(self, index: int) -> str:
        return bytes(self._ids[index]).decode("utf-8")

    def text(self, index: int) -> str:
        if self._texts is None:
            self._texts = _map(self.directory / "texts.bin")
        start, end = int(self._offsets[index]), int(self._offsets[index + 1])
        return bytes(self._texts[start:end]).decode("utf-8") if end > start else ""

    def id_array(self) -> np.ndarray:
        """Page ids in corpus order as fixed-width UTF-8 bytes (memory-mapped)."""
        return self._ids

    # -- lookup by id ------------------------------------------------------------------------
    def _sorted_ids(self) -> np.ndarray:
        if self._sorted is None:
            self._sorted = np.load(self.directory / "ids_sorted.npy", mmap_mode="r")
            self._order = np.load(self.directory / "ids_order.npy", mmap_mode="r")
        return self._sorted

    def missing(self, page_ids: Iterable[str]) -> list[str]:
        """The ids among `page_ids` that name no page, found in one vectorised search (a run's millions of
        page ids are checked against the corpus without a lookup each)."""
        known = self._sorted_ids()
        asked = list(page_ids)
        if not asked or not len(known):
            return asked
        keys = [page_id.encode("utf-8") if isinstance(page_id, str) else b"" for page_id in asked]
        width = known.dtype.itemsize
        unusable = [not key or len(key) > width or key.endswith(b"\0") for key in keys]
        wanted = np.array([b"" if bad else key for key, bad in zip(keys, unusable)], dtype=known.dtype)
        at = np.minimum(np.searchsorted(known, wanted), len(known) - 1)
        absent = (known[at] != wanted) | np.asarray(unusable)
        return [asked[i] for i in np.flatnonzero(absent)]

    def index_of(self, page_id: str) -> int | None:
        self._sorted_ids()
        assert self._sorted is not None
        key = page_id.encode("utf-8")
        if not key or len(key) > self._sorted.dtype.itemsize or key.endswith(b"\0"):
            return None
        at = int(np.searchsorted(self._sorted, key))
        if at < len(self._sorted) and bytes(self._sorted[at]) == key:
            assert self._order is not None
            return int(self._order[at])
        return None

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Page):
            item = item.id
        return isinstance(item, str) and self.index_of(item) is not None

    def by_id(self) -> Mapping[str, Page]:
        return _ById(self)

    # -- streaming ---------------------------------------------------------------------------
    def iter_chunks(self, chunk: int = 65536) -> Iterator[tuple[list[str], list[str]]]:
        """(ids, texts) per block of `chunk` pages, read with plain file reads (nothing stays mapped)."""
        n = len(self)
        with open(self.directory / "texts.bin", "rb") as handle:
            for start in range(0, n, chunk):
                stop = min(n, start + chunk)
                offsets = np.asarray(self._offsets[start : stop + 1], dtype=np.int64)
                handle.seek(int(offsets[0]))
                block = handle.read(int(offsets[-1] - offsets[0]))
                local = (offsets - offsets[0]).tolist()
                texts = [block[local[i] : local[i + 1]].decode("utf-8") for i in range(stop - start)]
                ids = [bytes(x).decode("utf-8") for x in np.asarray(self._ids[start:stop])]
                yield ids, texts

    def iter_texts(self, chunk: int = 65536) -> Iterator[list[str]]:
        for _, texts in self.iter_chunks(chunk):
            yield texts

    def __repr__(self) -> str:
        return f"PageStore({self.directory}, {len(self)} pages)"


class _ById(Mapping[str, Page]):
    """`Subset.page_by_id()` for a store: lookups by binary search, nothing materialised."""

    def __init__(self, store: PageStore):
        self._store = store

    def __getitem__(self, page_id: str) -> Page:
        index = self._store.index_of(page_id)
        if index is None:
            raise KeyError(page_id)
        return Page(page_id, self._store.text(index))

    def __contains__(self, page_id: object) -> bool:
        return isinstance(page_id, str) and self._store.index_of(page_id) is not None

    def __iter__(self) -> Iterator[str]:
        for i in range(len(self._store)):
            yield self._store.page_id(i)

    def __len__(self) -> int:
        return len(self._store)


def _map(path: Path) -> mmap.mmap | bytes:
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return b""  # an empty file cannot be mapped
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


def open_store(directory: Path) -> PageStore | None:
    """The store in `directory` if it is complete (manifest present, files of the recorded sizes)."""
    directory = Path(directory)
    if directory in _OPEN:
        return _OPEN[directory]
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        if manifest.get("format") != STORE_FORMAT:
            return None
        for name, size in manifest["files"].items():
            if (directory / name).stat().st_size != size:
                return None
        store = PageStore(directory, manifest)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    _OPEN[directory] = store
    return store


def build_store(
    directory: Path,
    pages: Iterable[tuple[str, str]],
    source: dict[str, Any] | None = None,
    on_page: Callable[[int], None] | None = None,
) -> PageStore:
    """Stream `(id, text)` pairs into a store at `directory` (replacing an incomplete one)."""
    directory = Path(directory)
    staging = staging_directory(directory)
    try:
        manifest = _write(staging, pages, on_page)
        manifest["source"] = source or {}
        manifest["files"] = {name: (staging / name).stat().st_size for name in _FILES}
        for name in _FILES:
            with open(staging / name, "rb") as handle:
                os.fsync(handle.fileno())
        atomic_write_json(staging / MANIFEST, manifest)
        replace_directory(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _OPEN.pop(directory, None)
    store = open_store(directory)
    if store is None:
        raise OSError(f"page store {directory} could not be reopened after writing")
    return store


def _write(staging: Path, pages: Iterable[tuple[str, str]], on_page: Callable[[int], None] | None) -> dict[str, Any]:
    digest = hashlib.sha256()
    offsets: list[np.ndarray] = []
    ids: list[bytes] = []
    empty: list[str] = []
    n_empty = 0
    position = 0
    batch: list[int] = []
    with open(staging / "texts.bin", "wb") as out:
        for page_id, text in pages:
            encoded_id = page_id.encode("utf-8")
            data = text.encode("utf-8")
            # Same bytes, same order as Subset.fingerprint over Page(page_id, text) (title None).
            digest.update(encoded_id + b"\0\0" + data + b"\1")
            out.write(data)
            ids.append(encoded_id)
            batch.append(position)
            position += len(data)
            if not text.strip():
                n_empty += 1
                if len(empty) < _KEEP_IDS:
                    empty.append(page_id)
            if len(batch) == 1 << 16:
                offsets.append(np.asarray(batch, dtype=np.int64))
                batch = []
                if on_page is not None:
                    on_page(1 << 16)
        if on_page is not None and batch:
            on_page(len(batch))
        batch.append(position)
        offsets.append(np.asarray(batch, dtype=np.int64))
    np.save(staging / "text_offsets.npy", np.concatenate(offsets))
    width = max((len(i) for i in ids), default=1) or 1
    id_array = np.array(ids, dtype=f"S{width}")
    del ids
    np.save(staging / "ids.npy", id_array)
    order = np.argsort(id_array, kind="stable")
    ordered = id_array[order]
    np.save(staging / "ids_sorted.npy", ordered)
    np.save(staging / "ids_order.npy", order.astype(np.int64))
    same = np.flatnonzero(ordered[1:] == ordered[:-1]) if len(ordered) > 1 else np.empty(0, dtype=np.int64)
    duplicates = list(dict.fromkeys(bytes(ordered[i + 1]).decode("utf-8") for i in same[:_KEEP_IDS].tolist()))
    return {
        "format": STORE_FORMAT,
        "n_pages": int(len(id_array)),
        "fingerprint": digest.hexdigest(),
        "duplicate_ids": duplicates,
        "n_duplicates": int(len(np.unique(ordered[1:][ordered[1:] == ordered[:-1]]))) if len(same) else 0,
        "empty_ids": empty,
        "n_empty": n_empty,
    }

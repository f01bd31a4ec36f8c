"""The embedding cache's keys: what identifies a vector, a chunk of items and a whole item list.

Kept apart from the store (`cache.py`) because the keys are the cache's contract with every past
run: a change here re-keys every cache on disk, so it should be made (and reviewed) on its own.

- An item is identified by the digest of everything its embedding is computed from (`item_digest`).
- The model settings (`embedder.describe()`: model, dimension, prompts; for a plugin or Python object, its
  whole identity, `base.identity.reuse_key`: distribution, version, describe(), its files' digest when
  installed from a folder), the input type and the chunk-file `FORMAT` make the settings digest, which
  prefixes every other key.
- Chunk boundaries are content-defined (a chunk closes after an item whose digest hits a fixed
  pattern, or at `max_chunk` items), so editing, inserting or deleting a page changes only the
  chunk around it: the rest of the corpus is still found by key.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from ..base.identity import reuse_key
from .base import Embedder, EmbedItem, InputType
from .chunk_file import FORMAT


def safe_name(name: str) -> str:
    """A benchmark or method name as one folder name."""
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
    described = json.dumps(reuse_key(embedder), sort_keys=True, ensure_ascii=False, default=str)
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


def lookup(
    root: Path, embedder: Embedder, items: list[EmbedItem], input_type: InputType, average: int, max_chunk: int
) -> Lookup:
    """Where a list's vectors live under `root`: its manifest path, chunk bounds and chunk keys (from
    the digest of every item: ~1 us per item, the whole cost of a cache hit besides reading)."""
    settings = settings_digest(embedder, input_type)
    digests = [item_digest(item) for item in items]
    list_key = hashlib.blake2b(settings + b"".join(digests), digest_size=20).hexdigest()
    bounds = list(chunk_bounds(digests, average, max_chunk))
    keys = [hashlib.blake2b(settings + b"".join(digests[a:b]), digest_size=20).hexdigest() for a, b in bounds]
    return Lookup(settings, digests, root / f"{input_type}-{list_key}.json", bounds, keys)

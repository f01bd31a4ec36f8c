"""The BM25 index: bm25s's eager score matrix, built in NumPy, and its on-disk cache.

bm25s precomputes, for every (term, document) pair, idf(term) * tf / (tf + k1 * (1 - b + b * dl / avgdl))
(its "lucene" variant, which like Lucene >= 8 has no (k1 + 1) factor) and stores the matrix in CSC
form. `bm25s.BM25.index` does this with a Python loop per document; `build_scores` computes the same
float operations in the same order over whole arrays, so its arrays are bit-identical to bm25s's
(tests compare them) at a fraction of the time. Retrieval is then bm25s's own.

`ScoresBuilder` does the same in two streaming passes for corpora that do not fit as one token
array (MS MARCO: ~450M tokens). Pass 1 takes chunks of tokenised documents and keeps, per chunk,
its (term, document, tf) triples sorted term-major (8 bytes each, spilled to disk when a spill
directory is given); pass 2, once document frequencies and the average length are known, scatters
each chunk's scores into the final CSC arrays (a counting sort). Peak memory is the final arrays
plus one chunk, and the arrays are identical to `build_scores`' (tests compare them).

The cache directory `<cache>/bm25/<key>/` holds bm25s's saved index (loadable with
`bm25s.BM25.load`, memory-mapped by us), the page ids as a fixed-width byte array, and a manifest
with each file's size and xxh3-128 digest (of sampled blocks for files past 256 MiB), written last; it is built in a temporary directory and
renamed into place, and a directory whose manifest or files do not check out is rebuilt.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from ..base.io import atomic_write_json, replace_directory, staging_directory
from .tokenize import TokenizedCorpus

INDEX_FORMAT = "2"
MANIFEST = "manifest.json"
PAGE_IDS = "page_ids.npy"
# Documents per internal chunk of the streaming build (document offsets fit in uint16).
CHUNK_DOCS = 1 << 16


def build_scores(corpus: TokenizedCorpus, k1: float, b: float) -> dict[str, Any]:
    """bm25s's `scores` dict (data, indices, indptr, num_docs) for Lucene BM25, vectorised."""
    n_docs = len(corpus.lengths)
    n_vocab = len(corpus.vocab)
    pairs, counts, stride = _count_pairs(corpus.term_ids, corpus.lengths)
    tf = counts.astype(np.float64)
    terms = pairs // stride
    docs = pairs - terms * stride
    doc_freq = np.bincount(terms, minlength=n_vocab)
    idf = _lucene_idf(doc_freq, n_docs)
    avg_doc_len = corpus.lengths.mean() if n_docs else np.float64(0.0)
    # Same operation order as bm25s's _score_tfc_lucene, in float64, rounded to float32 at the end.
    doc_len = corpus.lengths[docs].astype(np.float64)
    tfc = tf / (k1 * ((1 - b) + b * doc_len / avg_doc_len) + tf)
    data = (idf[terms].astype(np.float64) * tfc).astype(np.float32)
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(doc_freq, out=indptr[1:])
    return {"data": data, "indices": docs.astype(np.int32), "indptr": indptr, "num_docs": n_docs}


def _count_pairs(term_ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Every distinct (term, document) pair of a tokenized batch and its count (the term frequency), in
    term-major, document-minor order as CSC needs: one int64 key per token (term * stride + document),
    sorted, cut into runs. Returns (pair keys, counts, stride); the in-memory and the streaming builds
    count alike through it."""
    stride = max(len(lengths), 1)
    doc_of_token = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    keys = term_ids.astype(np.int64) * stride + doc_of_token
    del doc_of_token
    keys.sort()
    if not len(keys):
        return keys, np.empty(0, dtype=np.int64), stride
    first = np.empty(len(keys), dtype=bool)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    del first
    return keys[starts], np.diff(np.append(starts, len(keys))), stride


def _lucene_idf(doc_freq: np.ndarray, n_docs: int) -> np.ndarray:
    """ln(1 + (N - df + 0.5) / (df + 0.5)) per term, with math.log as bm25s uses, stored as float32."""
    values, inverse = np.unique(doc_freq, return_inverse=True)
    per_value = [math.log(1 + (n_docs - df + 0.5) / (df + 0.5)) if df else 0.0 for df in values.tolist()]
    return np.asarray(per_value, dtype=np.float64)[inverse].astype(np.float32)


class ScoresBuilder:
    """`build_scores` in two streaming passes; see the module docstring.

    `add(term_ids, lengths)` takes one chunk of documents (term ids may grow from chunk to chunk);
    `finish(n_vocab)` returns bm25s's `scores` dict.
    """

    def __init__(self, k1: float, b: float, spill_dir: Path | None = None):
        self.k1 = k1
        self.b = b
        self.spill_dir = Path(spill_dir) if spill_dir is not None else None
        self._chunks: list[tuple[Any, int, int]] = []  # (arrays or spill path, first doc, n docs)
        self._lengths: list[np.ndarray] = []
        self._doc_freq = np.zeros(0, dtype=np.int64)
        self.n_docs = 0
        self.nnz = 0

    def add(self, term_ids: np.ndarray, lengths: np.ndarray) -> None:
        lengths = np.asarray(lengths, dtype=np.int64)
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        for start in range(0, len(lengths), CHUNK_DOCS):
            stop = min(len(lengths), start + CHUNK_DOCS)
            self._add(term_ids[bounds[start] : bounds[stop]], lengths[start:stop])

    def _add(self, term_ids: np.ndarray, lengths: np.ndarray) -> None:
        n = len(lengths)
        pairs, tf, stride = _count_pairs(term_ids, lengths)
        terms = (pairs // stride).astype(np.int32)
        docs = (pairs - terms.astype(np.int64) * stride).astype(np.uint16)
        tf_small = tf.astype(np.uint16) if not len(tf) or int(tf.max()) <= np.iinfo(np.uint16).max else tf
        n_terms = int(terms.max()) + 1 if len(terms) else 0
        if n_terms > len(self._doc_freq):
            self._doc_freq = np.concatenate([self._doc_freq, np.zeros(n_terms - len(self._doc_freq), np.int64)])
        self._doc_freq[:n_terms] += np.bincount(terms, minlength=n_terms)
        arrays: Any = (terms, docs, tf_small)
        if self.spill_dir is not None:
            path = self.spill_dir / f"chunk{len(self._chunks):06d}.npz"
            np.savez(path, terms=terms, docs=docs, tf=tf_small)
            arrays = path
        self._chunks.append((arrays, self.n_docs, n))
        self._lengths.append(lengths)
        self.n_docs += n
        self.nnz += len(terms)

    def finish(self, n_vocab: int) -> dict[str, Any]:
        n_docs = self.n_docs
        lengths = np.concatenate(self._lengths) if self._lengths else np.empty(0, dtype=np.int64)
        self._lengths = []
        doc_freq = np.zeros(n_vocab, dtype=np.int64)
        doc_freq[: len(self._doc_freq)] = self._doc_freq
        idf = _lucene_idf(doc_freq, n_docs)
        avg_doc_len = lengths.mean() if n_docs else np.float64(0.0)
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        np.cumsum(doc_freq, out=indptr[1:])
        cursor = indptr[:-1].copy()
        data = np.empty(self.nnz, dtype=np.float32)
        indices = np.empty(self.nnz, dtype=np.int32)
        k1, b = self.k1, self.b
        while self._chunks:
            arrays, first_doc, _ = self._chunks.pop(0)
            if isinstance(arrays, Path):
                with np.load(arrays) as stored:
                    terms, docs, tf = stored["terms"], stored["docs"], stored["tf"]
                arrays.unlink()
            else:
                terms, docs, tf = arrays
            if not len(terms):
                continue
            # Within a chunk, triples are term-major with documents ascending: each term's run
            # lands right after what earlier chunks (earlier documents) wrote for that term.
            group = np.empty(len(terms), dtype=bool)
            group[0] = True
            np.not_equal(terms[1:], terms[:-1], out=group[1:])
            starts = np.flatnonzero(group)
            counts = np.diff(np.append(starts, len(terms)))
            heads = terms[starts]
            position = np.repeat(cursor[heads] - starts, counts) + np.arange(len(terms), dtype=np.int64)
            cursor[heads] += counts
            rows = docs.astype(np.int64) + first_doc
            indices[position] = rows
            # Same operation order as build_scores (and bm25s), float64 then float32.
            tf64 = tf.astype(np.float64)
            doc_len = lengths[rows].astype(np.float64)
            tfc = tf64 / (k1 * ((1 - b) + b * doc_len / avg_doc_len) + tf64)
            data[position] = (idf[terms].astype(np.float64) * tfc).astype(np.float32)
        return {"data": data, "indices": indices, "indptr": indptr, "num_docs": n_docs}


class PageIds:
    """Page ids by index row, from a fixed-width UTF-8 byte array (memory-mapped when loaded)."""

    def __init__(self, ids: np.ndarray):
        self.array = ids

    @classmethod
    def from_strings(cls, ids: list[str]) -> PageIds:
        encoded = [i.encode("utf-8") for i in ids]
        width = max((len(e) for e in encoded), default=1) or 1
        return cls(np.array(encoded, dtype=f"S{width}"))

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, row: int) -> str:
        return bytes(self.array[row]).decode("utf-8")


FULL_DIGEST_BYTES = 256 << 20
SAMPLE_BLOCKS = 64
SAMPLE_BYTES = 1 << 20


def _digest(path: Path) -> str:
    """xxh3-128 of a file, whole up to 256 MiB; past that, of its size and 64 blocks of 1 MiB spread
    evenly from the first byte to the last.

    The index directory is written under a temporary name and renamed, so a torn write cannot
    happen; the digest guards against a damaged or replaced file. Reading a 3 GB MS MARCO index
    whole on every load would cost more than the load (and a cold load would read it all from
    disk); a sample catches truncation and block damage at the cost of a few MiB of reads.
    """
    import xxhash

    digest = xxhash.xxh3_128()
    size = path.stat().st_size
    with open(path, "rb") as handle:
        if size <= FULL_DIGEST_BYTES:
            while block := handle.read(1 << 24):
                digest.update(block)
        else:
            digest.update(str(size).encode())
            last = size - SAMPLE_BYTES
            for i in range(SAMPLE_BLOCKS):
                handle.seek(last * i // (SAMPLE_BLOCKS - 1))
                digest.update(handle.read(SAMPLE_BYTES))
    return digest.hexdigest()


def _fsync_dir_files(directory: Path) -> None:
    for path in directory.iterdir():
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())


def save_index(
    target: Path, retriever, page_ids: PageIds, settings: dict[str, Any], staging: Path | None = None
) -> None:
    """Write the index to a temporary sibling directory, then rename it to `target` (replacing a bad one)."""
    staging = staging if staging is not None else staging_directory(target)
    try:
        for leftover in staging.iterdir():  # spill files of the build
            leftover.unlink()
        retriever.save(staging, show_progress=False)
        np.save(staging / PAGE_IDS, page_ids.array)
        files = {
            path.name: {"bytes": path.stat().st_size, "xxh3_128": _digest(path)} for path in sorted(staging.iterdir())
        }
        _fsync_dir_files(staging)
        atomic_write_json(staging / MANIFEST, {"format": INDEX_FORMAT, "settings": settings, "files": files})
        replace_directory(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def load_index(directory: Path, settings: dict[str, Any], backend: str):
    """(bm25s.BM25 with memory-mapped arrays, PageIds) from a verified cache directory, or None
    when it is absent or damaged."""
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("format") != INDEX_FORMAT or manifest.get("settings") != settings:
            return None
        for name, expected in manifest["files"].items():
            path = directory / name
            if not path.is_file() or path.stat().st_size != expected["bytes"] or _digest(path) != expected["xxh3_128"]:
                return None
        import bm25s

        retriever = bm25s.BM25.load(directory, show_progress=False, backend=backend, mmap=True)
        page_ids = PageIds(np.load(directory / PAGE_IDS, mmap_mode="r"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (retriever, page_ids) if _consistent(retriever, page_ids) else None


def _consistent(retriever, page_ids: PageIds) -> bool:
    """The shapes bm25s relies on: a column per vocabulary entry, a row per page (the content itself
    is what was written: the digests checked out)."""
    scores = retriever.scores
    indptr, indices, data = scores["indptr"], scores["indices"], scores["data"]
    return (
        scores["num_docs"] == len(page_ids)
        and len(indptr) == len(retriever.vocab_dict) + 1
        and int(indptr[-1]) == len(indices) == len(data)
    )

"""The BM25 index: bm25s's eager score matrix, built in NumPy, and its on-disk cache.

bm25s precomputes, for every (term, document) pair, idf(term) * tf / (tf + k1 * (1 - b + b * dl / avgdl))
(its "lucene" variant, which like Lucene >= 8 has no (k1 + 1) factor) and stores the matrix in CSC
form. `bm25s.BM25.index` does this with a Python loop per document; `build_scores` computes the same
float operations in the same order over whole arrays, so its arrays are bit-identical to bm25s's
(tests compare them) at a fraction of the time. Retrieval is then bm25s's own.

The cache directory `<cache>/bm25/<key>/` holds bm25s's saved index (loadable with
`bm25s.BM25.load`), the page ids and a manifest with each file's size and SHA-256, written last;
it is built in a temporary directory and renamed into place, and a directory whose manifest or
files do not check out is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..io import atomic_write_json
from .tokenize import TokenizedCorpus

INDEX_FORMAT = "1"
MANIFEST = "manifest.json"
PAGE_IDS = "page_ids.json"


def build_scores(corpus: TokenizedCorpus, k1: float, b: float) -> dict[str, Any]:
    """bm25s's `scores` dict (data, indices, indptr, num_docs) for Lucene BM25, vectorised."""
    n_docs = len(corpus.lengths)
    n_vocab = len(corpus.vocab)
    doc_of_token = np.repeat(np.arange(n_docs, dtype=np.int64), corpus.lengths)
    # One key per token, sorted: column (term) major, row (document) minor, as CSC needs.
    keys = corpus.term_ids.astype(np.int64) * max(n_docs, 1) + doc_of_token
    del doc_of_token
    keys.sort()
    if len(keys):
        first = np.empty(len(keys), dtype=bool)
        first[0] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        tf = np.diff(np.append(starts, len(keys))).astype(np.float64)
        pairs = keys[starts]
    else:
        tf = np.empty(0, dtype=np.float64)
        pairs = keys
    del keys
    terms = pairs // max(n_docs, 1)
    docs = pairs - terms * max(n_docs, 1)
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


def _lucene_idf(doc_freq: np.ndarray, n_docs: int) -> np.ndarray:
    """ln(1 + (N - df + 0.5) / (df + 0.5)) per term, with math.log as bm25s uses, stored as float32."""
    values, inverse = np.unique(doc_freq, return_inverse=True)
    per_value = [math.log(1 + (n_docs - df + 0.5) / (df + 0.5)) if df else 0.0 for df in values.tolist()]
    return np.asarray(per_value, dtype=np.float64)[inverse].astype(np.float32)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def _fsync_dir_files(directory: Path) -> None:
    for path in directory.iterdir():
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())


def save_index(target: Path, retriever, page_ids: list[str], settings: dict[str, Any]) -> None:
    """Write the index to a temporary sibling directory, then rename it to `target` (replacing a bad one)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        retriever.save(staging, show_progress=False)
        atomic_write_json(staging / PAGE_IDS, page_ids)
        files = {
            path.name: {"bytes": path.stat().st_size, "sha256": _sha256(path)} for path in sorted(staging.iterdir())
        }
        _fsync_dir_files(staging)
        atomic_write_json(staging / MANIFEST, {"format": INDEX_FORMAT, "settings": settings, "files": files})
        if target.exists():
            discard = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            os.replace(target, discard / "index")
            shutil.rmtree(discard, ignore_errors=True)
        try:
            os.replace(staging, target)
        except OSError:
            # Another process finished the same index first; theirs is equivalent.
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def load_index(directory: Path, settings: dict[str, Any], backend: str):
    """(bm25s.BM25, page ids) from a verified cache directory, or None when it is absent or damaged."""
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("format") != INDEX_FORMAT or manifest.get("settings") != settings:
            return None
        for name, expected in manifest["files"].items():
            path = directory / name
            if not path.is_file() or path.stat().st_size != expected["bytes"] or _sha256(path) != expected["sha256"]:
                return None
        import bm25s

        retriever = bm25s.BM25.load(directory, show_progress=False, backend=backend)
        page_ids = json.loads((directory / PAGE_IDS).read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (retriever, page_ids) if _consistent(retriever, page_ids) else None


def _consistent(retriever, page_ids: list[str]) -> bool:
    """The shapes bm25s relies on: a column per vocabulary entry, a row per page."""
    scores = retriever.scores
    indptr, indices, data = scores["indptr"], scores["indices"], scores["data"]
    return (
        scores["num_docs"] == len(page_ids)
        and len(indptr) == len(retriever.vocab_dict) + 1
        and int(indptr[-1]) == len(indices) == len(data)
        and (len(indices) == 0 or int(indices.max()) < len(page_ids))
    )

"""Dense retrieval past RAM: the cache's matrix file, its damage and crash handling, the chunk
read path (old and new checksums), the RAM limit and `--index-ram`."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

from evals_repro.base.data import Page, Query, Subset
from evals_repro.base.errors import UsageError
from evals_repro.base.matrix_file import MatrixFile
from evals_repro.cli import main
from evals_repro.embedders.base import EmbedItem
from evals_repro.embedders.cache_keys import item_digest
from evals_repro.embedders.chunk_file import _MAGIC, encode
from evals_repro.retrieval.base import MethodContext
from evals_repro.retrieval.dense import DenseRetriever, parse_size
from test_dense import CountingEmbedder, _cache, _items


def _warnings(caplog) -> str:
    """The embedding cache's warning lines so far, one per line."""
    return "\n".join(
        r.getMessage() for r in caplog.records if r.levelname == "WARNING" and r.name == "evals_repro.embedders.cache"
    )


def _method_dir(tmp_path):
    return tmp_path / "embeddings" / "bench" / "fake"


def test_past_the_ram_limit_the_cache_returns_its_matrix_file(tmp_path):
    items = _items(700)
    in_ram = _cache(tmp_path / "a", CountingEmbedder()).embed(items, "document")
    embedder = CountingEmbedder()
    cache = _cache(tmp_path, embedder)
    packed = cache.embed_matrix(items, "document", ram_limit=in_ram.nbytes - 1)
    assert isinstance(packed, MatrixFile) and packed.shape == in_ram.shape
    assert np.array_equal(packed.load(), in_ram) and np.array_equal(np.load(packed.path), in_ram)
    # One checksummed segment per chunk, in the manifest's order.
    manifest_path = next(_method_dir(tmp_path).glob("document-*.json"))
    manifest = json.loads(manifest_path.read_text())
    assert packed.path == manifest_path.with_suffix(".npy") and len(packed.segments) == len(manifest["chunks"])
    assert embedder.calls > 0 and not list(_method_dir(tmp_path).glob("*.partial"))
    # The next run finds the file: no embedding, no rewrite, the rows counted as cache hits.
    stamp = packed.path.stat().st_mtime_ns
    again = CountingEmbedder()
    cache = _cache(tmp_path, again)
    found = cache.embed_matrix(items, "document", ram_limit=0)
    assert isinstance(found, MatrixFile) and again.calls == 0 and found.path.stat().st_mtime_ns == stamp
    assert cache.usage.get("cache_hits") == 700
    # Under the limit the same list comes back in memory (from the chunks).
    assert np.array_equal(_cache(tmp_path, CountingEmbedder()).embed_matrix(items, "document", ram_limit=None), in_ram)


def test_a_run_killed_while_writing_the_matrix_file_leaves_no_partial_file(tmp_path):
    class Dying(CountingEmbedder):
        def embed(self, items, input_type):
            if self.calls == 3:
                raise KeyboardInterrupt
            return super().embed(items, input_type)

    dying = Dying()
    with pytest.raises(KeyboardInterrupt):
        _cache(tmp_path, dying, call_size=1).embed_matrix(_items(300), "document", ram_limit=0)
    assert not list(_method_dir(tmp_path).glob("*.npy*"))  # neither the file nor its partial
    resumed = CountingEmbedder()
    packed = _cache(tmp_path, resumed).embed_matrix(_items(300), "document", ram_limit=0)
    assert len(resumed.items) == 300 - len(dying.items)  # the chunks paid for were kept
    assert np.array_equal(packed.load(), CountingEmbedder().embed(_items(300), "document"))


def test_a_dead_writers_partial_file_is_reused(tmp_path):
    items = _items(200)
    packed = _cache(tmp_path, CountingEmbedder()).embed_matrix(items, "document", ram_limit=0)
    partial = packed.path.with_name(packed.path.name + ".partial")
    packed.path.rename(partial)  # as if the writer died before its rename
    partial.write_bytes(partial.read_bytes()[:5000])
    again = _cache(tmp_path, CountingEmbedder()).embed_matrix(items, "document", ram_limit=0)
    assert not partial.exists() and np.array_equal(again.load(), packed.load())


def _disk_subset(n: int = 300) -> Subset:
    words = ["solar", "wind", "tax", "court", "river", "cell", "virus", "engine", "bread", "opera"]
    pages = [Page(f"p{i:04d}", f"{words[i % 10]} {words[(i * 3) % 10]} note {i % 13}") for i in range(n)]
    pages += [Page(f"dup{i}", pages[i].text) for i in range(0, n, 7)]  # duplicates: exact ties
    queries = [Query(f"q{j}", f"{words[j % 10]} {words[(j * 7) % 10]} note", "en") for j in range(25)]
    return Subset("bench", "disk", "en", pages, queries, {"q0": {"p0000": 1}})


@pytest.mark.parametrize("index_ram", ["0", 10_000])  # both below the 80 KB matrix
def test_dense_from_disk_equals_in_memory(tmp_path, index_ram):
    subset = _disk_subset()
    in_ram = DenseRetriever("fake", CountingEmbedder(), MethodContext("bench", tmp_path / "ram"))
    expected = in_ram.run(subset, subset.queries, top_k=30)
    ctx = MethodContext("bench", tmp_path / "disk", options={"index_ram": index_ram})
    retriever = DenseRetriever("fake", CountingEmbedder(), ctx)
    got = retriever.run(subset, subset.queries, top_k=30)
    assert got == expected and [list(docs) for docs in got.values()] == [list(docs) for docs in expected.values()]
    assert list((tmp_path / "disk").rglob("document-*.npy")) and not list((tmp_path / "ram").rglob("*.npy"))
    # Ties really occur (duplicate pages), and k > n works from disk too.
    assert any(len(set(docs.values())) < len(docs) for docs in got.values())
    assert retriever.run(subset, subset.queries, top_k=10_000) == in_ram.run(subset, subset.queries, 10_000)


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_damaged_matrix_file_is_reported_rebuilt_and_searched_again(tmp_path, caplog, damage):
    subset = _disk_subset()
    ctx = MethodContext("bench", tmp_path, options={"index_ram": 0})
    expected = DenseRetriever("fake", CountingEmbedder(), ctx).run(subset, subset.queries, top_k=20)
    path = next(tmp_path.rglob("document-*.npy"))
    blob = bytearray(path.read_bytes())
    if damage == "flip":  # a row in the middle: found by its chunk's checksum during the search
        blob[4096 + 150 * 64 * 4 + 1] ^= 0x04
        path.write_bytes(bytes(blob))
    else:  # found when the file is opened
        path.write_bytes(bytes(blob[:-100]))
    embedder = CountingEmbedder()
    retriever = DenseRetriever("fake", embedder, MethodContext("bench", tmp_path, options={"index_ram": 0}))
    assert retriever.run(subset, subset.queries, top_k=20) == expected
    err = _warnings(caplog)
    assert f"embedding cache file {path} is damaged" in err and "rebuilding it from the chunks" in err
    assert embedder.calls == 0  # rebuilt from the chunks: nothing paid again
    assert MatrixFile.open(path).load().shape == (len(subset.pages), 64)


def test_old_blake2b_chunk_files_still_read_and_non_finite_ones_are_rejected(tmp_path, caplog):
    items = _items(40)
    expected = _cache(tmp_path, CountingEmbedder()).embed(items, "document")
    chunks = sorted(_method_dir(tmp_path).rglob("*.emb"))
    for number, chunk in enumerate(chunks):  # rewrite each chunk the way the first format did
        blob = chunk.read_bytes()
        end = blob.index(b"\n", len(_MAGIC))
        data = blob[end + 1 :]
        rows = np.frombuffer(data, dtype=np.float32).reshape(-1, 64).copy()
        if number == 0:
            rows[0, 0] = np.nan
        header = {
            "format": 1,
            "rows": rows.shape[0],
            "dimension": 64,
            "dtype": "float32",
            "checksum": hashlib.blake2b(rows.tobytes(), digest_size=16).hexdigest(),
        }
        chunk.write_bytes(_MAGIC + json.dumps(header).encode() + b"\n" + rows.tobytes())
    embedder = CountingEmbedder()
    matrix = _cache(tmp_path, embedder).embed(items, "document")
    assert np.array_equal(matrix, expected)
    assert "non-finite values" in _warnings(caplog)
    assert 0 < len(embedder.items) < 40  # only the first chunk was embedded again
    with pytest.raises(ValueError, match="non-finite"):
        encode(np.array([[np.inf, 0.0]], dtype=np.float32))


def test_item_digest_is_unchanged():
    """Cache keys digest the item exactly as the first format did: a faster implementation must
    keep every key (else every cached vector would be paid for again)."""

    def first_format(item):
        digest = hashlib.blake2b(digest_size=16)
        for part in (item.text, item.title):
            digest.update(b"\0" if part is None else b"\1" + part.encode("utf-8"))
            digest.update(b"\xff")
        digest.update(b"\0" if item.image is None else b"\1" + hashlib.blake2b(item.image, digest_size=16).digest())
        return digest.digest()

    for item in [
        EmbedItem(text="plain"),
        EmbedItem(text="", title="t"),
        EmbedItem(image=b"\x89PNG...", title="Fig. 1 — ü"),
        EmbedItem(text="both", image=b"x"),
    ]:
        assert item_digest(item) == first_format(item)


def test_parse_size_and_bad_index_ram(capsys):
    assert parse_size("8G") == 8 << 30 and parse_size("512MiB") == 512 << 20 and parse_size("1.5k") == 1536
    assert parse_size(0) == 0 and parse_size("auto") is None and parse_size(None) is None
    with pytest.raises(UsageError, match="--index-ram 'lots' is not a size"):
        parse_size("lots")
    code = main(["run", "bm25", "--benchmark", "sample", "--index-ram", "lots"])
    err = capsys.readouterr().err
    assert code != 0 and "--index-ram 'lots' is not a size" in err and len(err.strip().splitlines()) == 1


def test_available_memory_respects_an_address_space_limit():
    script = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.RLIM_INFINITY));"
        "from evals_repro.retrieval.dense import available_memory; print(available_memory())"
    )
    free = int(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)
    assert 0 < free < 3 << 30


def test_a_large_list_is_loaded_from_its_matrix_file_next_time(tmp_path, caplog):
    items = _items(500)
    first = _cache(tmp_path, CountingEmbedder(), pack_min_bytes=1).embed(items, "document")
    packed = next(_method_dir(tmp_path).glob("document-*.npy"))
    assert np.array_equal(np.load(packed), first)
    for chunk in _method_dir(tmp_path).rglob("*.emb"):  # only the matrix file is left to read
        chunk.unlink()
    embedder = CountingEmbedder()
    cache = _cache(tmp_path, embedder, pack_min_bytes=1)
    assert np.array_equal(cache.embed(items, "document"), first)
    assert embedder.calls == 0 and cache.usage.get("cache_hits") == 500
    # Below the size threshold no matrix file is written.
    _cache(tmp_path / "small", CountingEmbedder()).embed(items, "document")
    assert not list((tmp_path / "small").rglob("*.npy"))
    # A damaged matrix file is reported and the chunks (here: embedded again) take over.
    blob = bytearray(packed.read_bytes())
    blob[4096 + 10] ^= 0x01
    packed.write_bytes(bytes(blob))
    again = CountingEmbedder()
    assert np.array_equal(_cache(tmp_path, again, pack_min_bytes=1).embed(items, "document"), first)
    assert "is damaged (checksum mismatch in rows 0:" in _warnings(caplog) and len(again.items) == 500
    assert np.array_equal(np.load(packed), first)  # and rewritten


def test_a_cached_run_rewrites_no_manifest_and_a_damaged_one_is_rebuilt(tmp_path, caplog):
    items = _items(100)
    expected = _cache(tmp_path, CountingEmbedder()).embed(items, "document")
    manifest = next(_method_dir(tmp_path).glob("document-*.json"))
    stamp = manifest.stat().st_mtime_ns
    assert np.array_equal(_cache(tmp_path, CountingEmbedder()).embed(items, "document"), expected)
    assert manifest.stat().st_mtime_ns == stamp
    manifest.write_text('{"items": 100, "chunks": ["not", "these"]}')
    embedder = CountingEmbedder()
    assert np.array_equal(_cache(tmp_path, embedder).embed(items, "document"), expected)
    assert "is damaged (item count or chunks differ from its key)" in _warnings(caplog)
    assert embedder.calls == 0 and len(json.loads(manifest.read_text())["chunks"]) > 2

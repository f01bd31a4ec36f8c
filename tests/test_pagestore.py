"""PageStore (a corpus on disk) and the streamed BM25 build that MS MARCO-scale corpora go through."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from evals_repro.base.data import Page, Query, Subset, check_subset
from evals_repro.base.errors import DataError
from evals_repro.base.pagestore import PageStore, build_store, open_store
from evals_repro.retrieval import bm25_index
from evals_repro.retrieval.bm25 import BM25Retriever
from evals_repro.retrieval.bm25_index import ScoresBuilder, build_scores
from evals_repro.retrieval.tokenize import Analyzer, CorpusTokenizer

PAGES = [
    ("d2", "Wing flutter at transonic speed."),
    ("d10", "Boundary layer transition on a flat plate — naïve café model."),
    ("d1", ""),
    ("a", "Heat transfer in a composite slab; heat flux measured."),
]


def store_of(tmp_path, pages=PAGES) -> PageStore:
    return build_store(tmp_path / "store", iter(pages), source={"kind": "test"})


def test_store_is_a_sequence_of_pages_with_lookup_by_id(tmp_path):
    store = store_of(tmp_path)
    assert len(store) == 4
    assert [(p.id, p.text) for p in store] == PAGES
    assert store[1] == Page("d10", PAGES[1][1]) and store[-1].id == "a"
    assert [p.id for p in store[1:3]] == ["d10", "d1"]
    with pytest.raises(IndexError):
        store[4]
    by_id = store.by_id()
    assert by_id["d10"].text == PAGES[1][1] and by_id["d1"].text == ""
    assert "a" in by_id and "d3" not in by_id and "d" not in store and "d2" in store
    with pytest.raises(KeyError):
        by_id["missing"]
    assert list(store.iter_chunks(chunk=3)) == [
        (["d2", "d10", "d1"], [t for _, t in PAGES[:3]]),
        (["a"], [PAGES[3][1]]),
    ]


def test_store_fingerprint_and_checks_equal_those_of_the_page_list(tmp_path):
    store = store_of(tmp_path)
    pages = [Page(i, t) for i, t in PAGES]
    queries = [Query("q", "heat", "english")]
    as_store = Subset("b", "s", "english", store, queries, {"q": {"a": 1, "d2": 0}})
    as_list = Subset("b", "s", "english", pages, queries, {"q": {"a": 1, "d2": 0}})
    assert as_store.fingerprint() == as_list.fingerprint()
    assert as_store.data_digest() == as_list.data_digest()
    assert check_subset(as_store).counts == check_subset(as_list).counts == {"empty_page_text": 1}
    assert dict(as_store.page_by_id()) == as_list.page_by_id()
    unknown = Subset("b", "s", "english", store, queries, {"q": {"zz": 1}})
    with pytest.raises(DataError, match="qrels unknown page"):
        check_subset(unknown)


def test_duplicate_ids_are_fatal_as_for_a_list(tmp_path):
    store = store_of(tmp_path, PAGES + [("d10", "again")])
    assert store.duplicate_ids == ["d10"]
    with pytest.raises(DataError, match="duplicate page ids"):
        check_subset(Subset("b", "s", "english", store, [Query("q", "x", "english")], {}))


def test_reopened_store_is_the_same_object_and_an_incomplete_one_is_not_opened(tmp_path):
    store = store_of(tmp_path)
    assert open_store(tmp_path / "store") is store
    damaged = tmp_path / "damaged"
    build_store(damaged, iter(PAGES))
    with open(damaged / "texts.bin", "ab") as handle:
        handle.write(b"x")
    from evals_repro.base import pagestore

    pagestore._OPEN.pop(damaged, None)
    assert open_store(damaged) is None
    assert open_store(tmp_path / "nothing-here") is None


def test_a_failed_build_leaves_nothing_behind(tmp_path):
    def broken():
        yield "a", "text"
        raise RuntimeError("source died")

    with pytest.raises(RuntimeError):
        build_store(tmp_path / "store", broken())
    assert list(tmp_path.iterdir()) == []


# -- the streamed build ---------------------------------------------------------------------------
def random_corpus(n_docs: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    words = [f"w{i}{suffix}" for i in range(300) for suffix in ("", "s", "ing")]
    return [
        " ".join(rng.choice(words[: rng.randint(3, 900)]) for _ in range(rng.randint(0, 40))) for _ in range(n_docs)
    ]


def test_streamed_tokenizer_numbers_stems_as_the_whole_corpus_does():
    texts = random_corpus(700)
    analyzer = Analyzer("english")
    whole = analyzer.tokenize_corpus(texts, chunk_size=10_000)
    tokenizer = CorpusTokenizer(analyzer)
    parts = [tokenizer.add(texts[i : i + 97]) for i in range(0, len(texts), 97)]
    assert tokenizer.vocab == whole.vocab
    assert np.array_equal(np.concatenate([p[0] for p in parts]), whole.term_ids)
    assert np.array_equal(np.concatenate([p[1] for p in parts]), whole.lengths)


@pytest.mark.parametrize("spill", [False, True])
def test_two_pass_builder_is_bit_identical_to_build_scores(tmp_path, monkeypatch, spill):
    monkeypatch.setattr(bm25_index, "CHUNK_DOCS", 64)  # many internal chunks
    texts = random_corpus(700)
    analyzer = Analyzer("english")
    whole = analyzer.tokenize_corpus(texts)
    reference = build_scores(whole, 1.5, 0.75)
    tokenizer = CorpusTokenizer(analyzer)
    builder = ScoresBuilder(1.5, 0.75, spill_dir=tmp_path if spill else None)
    for start in range(0, len(texts), 250):
        builder.add(*tokenizer.add(texts[start : start + 250]))
    mine = builder.finish(len(tokenizer.vocab))
    assert mine["num_docs"] == reference["num_docs"] == 700
    for key in ("indptr", "indices"):
        assert np.array_equal(mine[key], reference[key]), key
    assert mine["data"].tobytes() == reference["data"].tobytes()
    assert list(tmp_path.iterdir()) == []  # spill files are consumed


def test_bm25_on_a_store_equals_bm25_on_the_page_list(tmp_path):
    texts = random_corpus(400, seed=5)
    pairs = [(f"p{i}", t) for i, t in enumerate(texts)]
    store = build_store(tmp_path / "store", iter(pairs))
    queries = [Query(f"q{i}", " ".join(texts[i * 7].split()[:3]), "english") for i in range(20)]
    in_store = Subset("b", "s", "english", store, queries, {})
    in_list = Subset("b", "s", "english", [Page(i, t) for i, t in pairs], queries, {})
    retriever = BM25Retriever("bm25", tmp_path / "cache")
    from_store = retriever.run(in_store, queries, 10)
    assert retriever.describe()["cache_hit"] is False
    from_list = BM25Retriever("bm25", tmp_path / "cache").run(in_list, queries, 10)  # same key: loaded
    assert from_store == from_list and any(from_store.values())
    manifest = json.loads(next((tmp_path / "cache" / "bm25").iterdir()).joinpath("manifest.json").read_text())
    assert manifest["format"] == bm25_index.INDEX_FORMAT and "page_ids.npy" in manifest["files"]


def test_a_damaged_index_file_is_rebuilt(tmp_path):
    pages = [Page(f"p{i}", t) for i, t in enumerate(random_corpus(50))]
    subset = Subset("b", "s", "english", pages, [Query("q", "w1 w2", "english")], {})
    first = BM25Retriever("bm25", tmp_path).run(subset, subset.queries, 5)
    directory = next((tmp_path / "bm25").iterdir())
    data = directory / "data.csc.index.npy"
    raw = bytearray(data.read_bytes())
    raw[-1] ^= 0xFF  # same size, different content: only the digest can tell
    data.write_bytes(bytes(raw))
    retriever = BM25Retriever("bm25", tmp_path)
    assert retriever.run(subset, subset.queries, 5) == first
    assert retriever.describe()["cache_hit"] is False


def test_digest_of_a_large_file_samples_blocks_from_first_to_last_byte(tmp_path, monkeypatch):
    monkeypatch.setattr(bm25_index, "FULL_DIGEST_BYTES", 1000)
    monkeypatch.setattr(bm25_index, "SAMPLE_BYTES", 10)
    path = tmp_path / "big.npy"
    path.write_bytes(bytes(range(256)) * 40)
    before = bm25_index._digest(path)
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 1  # the last block is always sampled
    path.write_bytes(bytes(raw))
    assert bm25_index._digest(path) != before
    path.write_bytes(bytes(raw[:-1]))  # truncated
    assert bm25_index._digest(path) != before


def test_kernel_scores_equal_bm25s_numpy_retrieval(tmp_path):
    from evals_repro.retrieval.bm25_kernels import top_k

    pages = [Page(f"p{i}", t) for i, t in enumerate(random_corpus(600, seed=11))]
    subset = Subset("b", "s", "english", pages, [Query("q", "x", "english")], {})
    index = BM25Retriever("bm25", tmp_path, backend="numpy").index(subset)
    vocab = index.retriever.vocab_dict
    rng = random.Random(2)
    terms = [[rng.choice(list(vocab.values())) for _ in range(rng.randint(1, 6))] for _ in range(40)]
    terms.append([terms[0][0], terms[0][0]])  # a repeated term counts twice, as in bm25s
    for k in (5, 50, 600):
        docs, scores = top_k(index.retriever.scores, terms, k)
        their_docs, their_scores = index.retriever.retrieve(terms, k=k, show_progress=False, backend_selection="numpy")
        assert np.array_equal(scores, their_scores.astype(np.float32)), k  # same sums, same order
        for row in range(len(terms)):
            cut = scores[row][-1]  # above it, both hold the same documents (ties at the cut may differ)
            mine = {d: s for d, s in zip(docs[row].tolist(), scores[row].tolist()) if s > cut}
            theirs = {d: s for d, s in zip(their_docs[row].tolist(), their_scores[row].tolist()) if s > cut}
            assert mine == theirs

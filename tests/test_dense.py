"""Embedding cache and DenseRetriever, with a counting bag-of-words fake embedder."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from evals_repro.base.data import Page, Query, Subset
from evals_repro.base.errors import DataError, UsageError
from evals_repro.embedders.base import EmbedItem, normalise
from evals_repro.embedders.cache import EmbeddingCache
from evals_repro.retrieval.base import MethodContext, Retriever
from evals_repro.retrieval.dense import DenseRetriever


class CountingEmbedder:
    """Hashed bag of words; counts calls and items so cache hits are visible."""

    name = "fake"
    model = "fake-bow"
    dimension = 64
    supports_images = False

    def __init__(self, dimension: int = 64, batch_size: int = 8):
        self.dimension = dimension
        self.batch_size = batch_size
        self.calls = 0
        self.items: list[EmbedItem] = []

    def describe(self):
        return {"model": self.model, "dimension": self.dimension}

    def embed(self, items, input_type):
        self.calls += 1
        self.items.extend(items)
        out = np.zeros((len(items), self.dimension), dtype=np.float32)
        for row, item in enumerate(items):
            for word in re.findall(r"\w+", (item.text or "").lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
            out[row, 0] += 0.01  # empty texts still get a unit vector
        return normalise(out)


def _items(n: int, prefix: str = "page") -> list[EmbedItem]:
    return [EmbedItem(text=f"{prefix} {i} about topic {i % 7} and more words {i * 3}") for i in range(n)]


def _cache(tmp_path: Path, embedder, **kwargs) -> EmbeddingCache:
    return EmbeddingCache.for_method(tmp_path, "bench", "fake", embedder, **kwargs)


def test_cache_hit_makes_zero_embed_calls(tmp_path):
    embedder = CountingEmbedder()
    first = _cache(tmp_path, embedder).embed(_items(300), "document")
    assert embedder.calls > 1 and len(embedder.items) == 300
    assert len(list((tmp_path / "embeddings" / "bench" / "fake").glob("document-*.json"))) == 1
    again = CountingEmbedder()
    cache = _cache(tmp_path, again)
    second = cache.embed(_items(300), "document")
    assert again.calls == 0
    assert np.array_equal(first, second)
    assert cache.usage.get("cache_hits") == 300 and cache.usage.get("embedded_items") == 0


def test_input_type_and_model_settings_are_part_of_the_key(tmp_path):
    _cache(tmp_path, CountingEmbedder()).embed(_items(20), "document")
    as_queries = CountingEmbedder()
    _cache(tmp_path, as_queries).embed(_items(20), "query")
    assert len(as_queries.items) == 20
    other_dimension = CountingEmbedder(dimension=32)
    _cache(tmp_path, other_dimension).embed(_items(20), "document")
    assert len(other_dimension.items) == 20


def test_changed_page_re_embeds_only_its_chunk(tmp_path):
    items = _items(400)
    _cache(tmp_path, CountingEmbedder()).embed(items, "document")
    edited = list(items)
    edited[200] = EmbedItem(text="a completely rewritten page")
    edited.insert(50, EmbedItem(text="a new page inserted early"))
    embedder = CountingEmbedder()
    cache = _cache(tmp_path, embedder)
    matrix = cache.embed(edited, "document")
    texts = {item.text for item in embedder.items}
    assert "a completely rewritten page" in texts and "a new page inserted early" in texts
    assert len(embedder.items) <= 2 * cache.max_chunk  # at most the two chunks around the edits
    assert len(embedder.items) < 100
    np.testing.assert_allclose(matrix, CountingEmbedder().embed(edited, "document"), atol=1e-7)


def test_a_run_killed_mid_corpus_keeps_what_it_paid_for(tmp_path):
    class Dying(CountingEmbedder):
        def embed(self, items, input_type):
            if self.calls == 2:
                raise KeyboardInterrupt
            return super().embed(items, input_type)

    dying = Dying()
    with pytest.raises(KeyboardInterrupt):
        _cache(tmp_path, dying, call_size=1).embed(_items(200), "document")  # one chunk per call
    paid = len(dying.items)
    assert paid > 0
    resumed = CountingEmbedder()
    _cache(tmp_path, resumed).embed(_items(200), "document")
    assert len(resumed.items) == 200 - paid


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_damaged_chunk_is_reported_and_rebuilt(tmp_path, caplog, damage):
    items = _items(60)
    expected = _cache(tmp_path, CountingEmbedder()).embed(items, "document")
    chunk = sorted((tmp_path / "embeddings").rglob("*.emb"))[0]
    blob = chunk.read_bytes()
    if damage == "truncate":
        chunk.write_bytes(blob[:-10])
    elif damage == "flip":
        chunk.write_bytes(blob[:-1] + bytes([blob[-1] ^ 0x55]))
    else:
        chunk.write_bytes(b"not an embeddings file")
    embedder = CountingEmbedder()
    cache = _cache(tmp_path, embedder)
    matrix = cache.embed(items, "document")
    assert 0 < len(embedder.items) < 60
    warnings = [r for r in caplog.records if r.levelname == "WARNING" and r.name == "evals_repro.embedders.cache"]
    assert len(warnings) == 1 and warnings[0].getMessage().startswith(f"embedding cache file {chunk} is damaged")
    assert cache.usage.get("cache_damaged") == 1
    np.testing.assert_array_equal(matrix, expected)
    fresh = CountingEmbedder()
    _cache(tmp_path, fresh).embed(items, "document")
    assert fresh.calls == 0  # the rebuilt chunk is good again


def _subset() -> Subset:
    pages = [
        Page("p1", "Photosynthesis converts light energy into chemical energy in plants.", title="Plants"),
        Page("p2", "The French revolution began in 1789 and ended the monarchy."),
        Page("p3", "Volcanoes erupt molten rock called lava from the mantle."),
        Page("p4", "", title="Empty page"),
        Page("p5", "Bread is baked from flour, water, yeast and salt."),
    ]
    queries = [
        Query("q1", "how do plants make chemical energy from light", "en"),
        Query("q2", "when did the french revolution begin", "en"),
        Query("q3", "lava from volcanoes", "en"),
    ]
    qrels = {"q1": {"p1": 2}, "q2": {"p2": 2}, "q3": {"p3": 1}}
    return Subset("bench", "tiny", "en", pages, queries, qrels)


def test_dense_retriever_ranks_the_relevant_page_first(tmp_path):
    embedder = CountingEmbedder(dimension=256)
    ctx = MethodContext(benchmark="bench", cache_dir=tmp_path)
    retriever = DenseRetriever("fake", embedder, ctx)
    assert isinstance(retriever, Retriever)
    subset = _subset()
    run = retriever.run(subset, subset.queries, top_k=10)
    assert {q: max(docs, key=docs.get) for q, docs in run.items()} == {"q1": "p1", "q2": "p2", "q3": "p3"}
    assert all(len(docs) == 5 for docs in run.values())  # top_k above the corpus size
    embedded = [item.text for item in embedder.items]
    assert "title: Plants\nPhotosynthesis converts light energy into chemical energy in plants." in embedded
    assert "title: Empty page\n" in embedded  # an empty page is still embedded
    assert ctx.usage.get("embedded_items") == 8
    calls = embedder.calls
    assert retriever.run(subset, subset.queries, top_k=3) == {
        q: dict(sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:3]) for q, docs in run.items()
    }
    assert embedder.calls == calls and ctx.usage.get("cache_hits") == 8


def test_images_are_refused_for_text_only_embedders(tmp_path):
    ctx = MethodContext(benchmark="bench", cache_dir=tmp_path, content="images")
    with pytest.raises(UsageError, match="text only"):
        DenseRetriever("fake", CountingEmbedder(), ctx)


def test_image_content_needs_an_image_on_every_page(tmp_path):
    class ImageEmbedder(CountingEmbedder):
        supports_images = True

    ctx = MethodContext(benchmark="bench", cache_dir=tmp_path, content="images")
    retriever = DenseRetriever("fake", ImageEmbedder(), ctx)
    with pytest.raises(DataError, match="page p1 has no image"):
        retriever.run(_subset(), _subset().queries, 5)


def test_no_queries_embeds_nothing(tmp_path):
    embedder = CountingEmbedder()
    retriever = DenseRetriever("fake", embedder, MethodContext(benchmark="bench", cache_dir=tmp_path))
    assert retriever.run(_subset(), [], 10) == {} and embedder.calls == 0


def test_title_goes_inline_or_into_the_title_field():
    from evals_repro.base.rendering import PageStyle, render_page
    from evals_repro.embedders.gemini import prompted

    page = Page("p1", "Body text.", title="Heat pumps")
    assert render_page(page, PageStyle.LABELLED) == EmbedItem(text="title: Heat pumps\nBody text.")
    fielded = render_page(page, PageStyle.TITLE_FIELD)
    assert fielded == EmbedItem(text="Body text.", title="Heat pumps")
    assert prompted(fielded, "document") == "title: Heat pumps | text: Body text."
    assert prompted(render_page(Page("p2", "x"), PageStyle.TITLE_FIELD), "document") == "title: none | text: x"

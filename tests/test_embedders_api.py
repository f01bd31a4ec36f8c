"""The real voyageai, cohere and google-genai clients against fake servers, through the API embedders."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from evals_repro.base.errors import ConfigurationError, ProviderError
from evals_repro.embedders.base import EmbedItem
from evals_repro.embedders.registry import build_embedder
from evals_repro.providers import retry
from evals_repro.retrieval.base import MethodContext
from fakes.base import Reply, bag_of_words, image_words
from fakes.cohere import FakeCohere
from fakes.gemini import FakeGemini
from fakes.voyage import FakeVoyage

TEXTS = [
    "the cat sat on the mat",
    "dogs chase cats",
    "stock markets fell sharply",
    "a cat and a dog",
    "quarterly revenue rose",
    "the mat was red",
]


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setattr(retry, "BACKOFF_BASE", 0.02)


@pytest.fixture
def voyage(monkeypatch):
    with FakeVoyage() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "test-voyage-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        yield fake


@pytest.fixture
def cohere_fake(monkeypatch):
    with FakeCohere() as fake:
        monkeypatch.setenv("CO_API_KEY", "test-cohere-key")
        monkeypatch.setenv("CO_API_URL", fake.url)
        yield fake


@pytest.fixture
def gemini(monkeypatch):
    with FakeGemini() as fake:
        monkeypatch.setenv("GEMINI_API_KEY", "test-gemini-key")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        yield fake


def context(**options) -> MethodContext:
    return MethodContext(benchmark="sample", options={"timeout": 5, "max_attempts": 3, **options})


def expected(texts: list[str]) -> np.ndarray:
    return np.vstack([bag_of_words(t) for t in texts])


def png(seed: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (seed, 2 * seed % 256, 77)).save(buffer, format="PNG")
    return buffer.getvalue()


def items(texts) -> list[EmbedItem]:
    return [EmbedItem(text=t) for t in texts]


# -- Voyage --------------------------------------------------------------------------------------


def test_voyage_success_in_order_with_usage(voyage):
    ctx = context()
    embedder = build_embedder("voyage-4-large", ctx)
    matrix = embedder.embed(items(TEXTS), "document")
    assert matrix.dtype == np.float32 and matrix.shape == (len(TEXTS), 64)
    np.testing.assert_allclose(matrix, expected(TEXTS), atol=1e-6)
    body = voyage.requests[0].json
    assert body["model"] == "voyage-4-large" and body["input_type"] == "document" and body["input"] == TEXTS
    assert voyage.requests[0].headers["authorization"] == "Bearer test-voyage-key"
    usage = ctx.usage.as_dict()
    assert usage["voyage_requests"] == 1 and usage["voyage_attempts"] == 1
    assert usage["voyage_tokens"] == sum(max(1, round(len(t.split()) * 1.3)) for t in TEXTS)  # the fake's count


def test_voyage_batch_split_keeps_positions(voyage):
    embedder = build_embedder("voyage-4", context())
    from dataclasses import replace

    embedder.settings = replace(embedder.settings, max_batch_items=2)
    matrix = embedder.embed(items(TEXTS), "query")
    assert len(voyage.requests) == 3
    assert sorted(tuple(r.json["input"]) for r in voyage.requests) == sorted(
        [tuple(TEXTS[0:2]), tuple(TEXTS[2:4]), tuple(TEXTS[4:6])]
    )
    np.testing.assert_allclose(matrix, expected(TEXTS), atol=1e-6)


def test_voyage_429_honours_retry_after(voyage):
    voyage.fail(429, retry_after="0.4")
    ctx = context()
    matrix = build_embedder("voyage-4-lite", ctx).embed(items(TEXTS[:2]), "query")
    assert matrix.shape == (2, 64)
    assert len(voyage.requests) == 2
    assert voyage.requests[1].received - voyage.requests[0].received >= 0.4
    usage = ctx.usage.as_dict()
    assert usage["voyage_attempts"] == 2 and usage["voyage_retries"] == 1 and usage["voyage_rate_limited"] == 1
    assert usage["voyage_wait_seconds"] >= 0.4


@pytest.mark.parametrize("status", [500, 503])
def test_voyage_5xx_is_retried(voyage, status):
    voyage.fail(status)
    ctx = context()
    build_embedder("voyage-4-large", ctx).embed(items(TEXTS[:1]), "document")
    assert len(voyage.requests) == 2 and ctx.usage.get("voyage_retries") == 1


def test_voyage_timeout_is_retried(voyage):
    voyage.script(Reply(200, sleep=1.0))
    ctx = context(timeout=0.3)
    matrix = build_embedder("voyage-4-large", ctx).embed(items(TEXTS[:2]), "document")
    np.testing.assert_allclose(matrix, expected(TEXTS[:2]), atol=1e-6)
    assert ctx.usage.get("voyage_retries") == 1


def test_voyage_exhausted_retries_stop_with_one_line(voyage):
    voyage.fail(503, times=5)
    with pytest.raises(ProviderError) as info:
        build_embedder("voyage-4-large", context(max_attempts=2)).embed(items(TEXTS), "document")
    assert "after 2 attempts" in info.value.one_line() and "HTTP 503" in info.value.one_line()
    assert len(voyage.requests) == 2


def test_voyage_unreadable_200_is_retried(voyage):
    voyage.script(Reply(200, raw=b"<html>proxy error</html>"))
    ctx = context()
    matrix = build_embedder("voyage-4-large", ctx).embed(items(TEXTS), "document")
    np.testing.assert_allclose(matrix, expected(TEXTS), atol=1e-6)
    assert len(voyage.requests) == 2 and ctx.usage.get("voyage_attempts") == 2


def test_voyage_wrong_count_is_not_a_partial_matrix(voyage):
    short = Reply(
        200,
        {
            "object": "list",
            "data": [{"object": "embedding", "embedding": [0.1, 0.2], "index": 0}],
            "model": "voyage-4-large",
            "usage": {"total_tokens": 3},
        },
    )
    voyage.script(short, short, short)
    with pytest.raises(ProviderError, match="asked for 3 embeddings") as info:
        build_embedder("voyage-4-large", context()).embed(items(TEXTS[:3]), "document")
    assert "after 3 attempts" in info.value.one_line() and len(voyage.requests) == 3


def test_voyage_400_fails_at_once_with_message(voyage):
    voyage.script(voyage.error_reply(400, "input_type must be query or document"))
    with pytest.raises(ProviderError) as info:
        build_embedder("voyage-4-large", context()).embed(items(TEXTS), "document")
    assert "input_type must be query or document" in info.value.one_line()
    assert "test-voyage-key" not in info.value.one_line()
    assert len(voyage.requests) == 1


def test_missing_key_fails_before_any_request(voyage, monkeypatch, tmp_path):
    from evals_repro.providers import keys

    monkeypatch.setattr(keys, "_loaded", False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VOYAGE_API_KEY")
    with pytest.raises(ConfigurationError, match="VOYAGE_API_KEY"):
        build_embedder("voyage-4-large", context())
    assert voyage.requests == []


def test_voyage_multimodal_images_and_text(voyage):
    images = [png(1), png(2)]
    batch = [EmbedItem(image=images[0]), EmbedItem(text="a caption", image=images[1]), EmbedItem(text="query text")]
    matrix = build_embedder("voyage-multimodal-3.5", context()).embed(batch, "document")
    body = voyage.requests[0].json
    assert voyage.requests[0].path == "/v1/multimodalembeddings"
    assert body["inputs"][0]["content"][0]["image_base64"].startswith("data:image/png;base64,")
    np.testing.assert_allclose(
        matrix, expected([image_words(images[0]), "a caption " + image_words(images[1]), "query text"]), atol=1e-6
    )


def test_text_model_refuses_images(voyage):
    from evals_repro.base.errors import UsageError

    with pytest.raises(UsageError, match="text only"):
        build_embedder("voyage-4", context()).embed([EmbedItem(image=png(3))], "document")
    assert voyage.requests == []


# -- Cohere --------------------------------------------------------------------------------------


def test_cohere_text_split_at_96_keeps_positions(cohere_fake):
    texts = [f"document number {i} about topic{i % 7}" for i in range(100)]
    ctx = context()
    matrix = build_embedder("cohere-embed-v4.0", ctx).embed(items(texts), "query")
    assert [len(r.json["texts"]) for r in cohere_fake.requests] in ([96, 4], [4, 96])
    assert all(r.json["input_type"] == "search_query" and r.json["model"] == "embed-v4.0" for r in cohere_fake.requests)
    np.testing.assert_allclose(matrix, expected(texts), atol=1e-6)
    assert ctx.usage.get("cohere_attempts") == 2


def test_cohere_images_go_through_inputs(cohere_fake):
    image = png(9)
    matrix = build_embedder("cohere-embed-v4.0", context()).embed(
        [EmbedItem(image=image), EmbedItem(text="page text", image=png(10))], "document"
    )
    body = cohere_fake.requests[0].json
    assert body["input_type"] == "search_document"
    assert body["inputs"][0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    np.testing.assert_allclose(matrix[0], bag_of_words(image_words(image)), atol=1e-6)


def test_cohere_429_retry_after_and_502(cohere_fake):
    cohere_fake.fail(429, retry_after="0.3")
    cohere_fake.fail(502)
    ctx = context(max_attempts=4)
    build_embedder("cohere-embed-v4.0", ctx).embed(items(TEXTS), "document")
    assert len(cohere_fake.requests) == 3
    assert cohere_fake.requests[1].received - cohere_fake.requests[0].received >= 0.3
    assert ctx.usage.get("cohere_retries") == 2 and ctx.usage.get("cohere_rate_limited") == 1


def test_cohere_timeout_and_malformed(cohere_fake):
    cohere_fake.script(Reply(200, sleep=1.0))
    ctx = context(timeout=0.3)
    build_embedder("cohere-embed-v4.0", ctx).embed(items(TEXTS[:2]), "document")
    assert ctx.usage.get("cohere_retries") == 1
    cohere_fake.script(Reply(200, raw=b"{not json"))
    ctx = context()
    build_embedder("cohere-embed-v4.0", ctx).embed(items(TEXTS[:2]), "document")
    assert ctx.usage.get("cohere_retries") == 1 and ctx.usage.get("cohere_attempts") == 2


# -- Gemini --------------------------------------------------------------------------------------


def test_gemini_one_embedding_per_item_with_prompts(gemini):
    batch = [EmbedItem(text="alpha beta", title="Greek"), EmbedItem(text="gamma")]
    matrix = build_embedder("gemini-embedding-2", context()).embed(batch, "document")
    request = gemini.requests[0]
    assert request.path.endswith("/models/gemini-embedding-2:batchEmbedContents")
    sent = [r["content"]["parts"][0]["text"] for r in request.json["requests"]]
    assert sent == ["title: Greek | text: alpha beta", "title: none | text: gamma"]
    np.testing.assert_allclose(matrix, expected(sent), atol=1e-6)
    build_embedder("gemini-embedding-2", context()).embed([EmbedItem(text="where is alpha")], "query")
    assert (
        gemini.requests[1].json["requests"][0]["content"]["parts"][0]["text"]
        == "task: search result | query: where is alpha"
    )


def test_gemini_noprompt_sends_bare_text(gemini):
    build_embedder("gemini-embedding-2-noprompt", context()).embed(items(TEXTS[:2]), "query")
    sent = [r["content"]["parts"][0]["text"] for r in gemini.requests[0].json["requests"]]
    assert sent == TEXTS[:2]


def test_gemini_chunks_at_100_requests(gemini):
    texts = [f"text {i}" for i in range(150)]
    matrix = build_embedder("gemini-embedding-2-noprompt", context()).embed(items(texts), "document")
    assert sorted(len(r.json["requests"]) for r in gemini.requests) == [50, 100]
    np.testing.assert_allclose(matrix, expected(texts), atol=1e-6)


def test_gemini_429_timeout_and_400(gemini):
    gemini.fail(429, retry_after="0.3")
    ctx = context(timeout=0.5)
    build_embedder("gemini-embedding-2", ctx).embed(items(TEXTS[:1]), "query")
    assert ctx.usage.get("gemini_rate_limited") == 1
    assert gemini.requests[1].received - gemini.requests[0].received >= 0.3
    gemini.script(Reply(200, sleep=1.5))
    build_embedder("gemini-embedding-2", ctx).embed(items(TEXTS[:1]), "query")  # httpx2 timeout, retried
    assert ctx.usage.get("gemini_retries") == 2
    gemini.fail(400)
    with pytest.raises(ProviderError, match="HTTP 400"):
        build_embedder("gemini-embedding-2", ctx).embed(items(TEXTS[:1]), "query")


def test_gemini_malformed_body(gemini):
    gemini.script(*[Reply(200, {"embeddings": [{"values": [1.0, 2.0]}]}) for _ in range(3)])
    with pytest.raises(ProviderError, match="asked for 2 embeddings"):
        build_embedder("gemini-embedding-2", context()).embed(items(TEXTS[:2]), "query")
    assert len(gemini.requests) == 3


def test_empty_input_makes_no_request(gemini):
    assert build_embedder("gemini-embedding-2", context()).embed([], "query").shape[0] == 0
    assert gemini.requests == []


@pytest.mark.parametrize("method", ["voyage-4", "cohere-embed-v4.0", "gemini-embedding-2"])
def test_dropped_connection_is_retried(method, voyage, cohere_fake, gemini):
    fake = {"voyage-4": voyage, "cohere-embed-v4.0": cohere_fake, "gemini-embedding-2": gemini}[method]
    fake.script(Reply(drop=True))
    ctx = context()
    matrix = build_embedder(method, ctx).embed(items(TEXTS[:2]), "document")
    assert matrix.shape[0] == 2 and len(fake.requests) == 2
    provider = method.split("-")[0]
    assert ctx.usage.get(f"{provider}_retries") == 1

"""The real cohere, voyageai and mixedbread clients reranking against fakes on 127.0.0.1."""

from __future__ import annotations

import pytest

from evals_repro.base.errors import ConfigurationError, ProviderError, UsageError
from evals_repro.base.registry import RERANKERS
from evals_repro.retrieval.base import MethodContext
from fakes.base import count_tokens
from fakes.mixedbread import FakeMixedbread
from fakes.rerankers import FakeCohereRerank, FakeVoyageRerank, count_requests, relevance

DOCS = ["the cat sat on the mat", "a dog in the fog", "cats and dogs", "nothing relevant here", "the cat again"]
QUERY = "cat on mat"


def _ctx(**options):
    return MethodContext(benchmark="toy", options={"timeout": 5, "max_attempts": 3, **options})


@pytest.fixture
def cohere_fake(monkeypatch):
    with FakeCohereRerank() as fake:
        monkeypatch.setenv("CO_API_URL", fake.url)
        monkeypatch.setenv("CO_API_KEY", "test-key")
        yield fake


@pytest.fixture
def voyage_fake(monkeypatch):
    with FakeVoyageRerank() as fake:
        monkeypatch.setenv("VOYAGE_BASE_URL", f"{fake.url}/v1")
        monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
        yield fake


@pytest.fixture
def mixedbread_fake(monkeypatch):
    with FakeMixedbread() as fake:
        monkeypatch.setenv("MIXEDBREAD_BASE_URL", fake.url)
        monkeypatch.setenv("MXBAI_API_KEY", "test-key")
        yield fake


def _build(name, model=None, **options):
    ctx = _ctx(**options)
    return RERANKERS.require(name).factory(name, model, ctx), ctx


EXPECTED = [relevance(QUERY, doc) for doc in DOCS]


def test_cohere_scores_align_with_input_and_send_the_doc_limit(cohere_fake):
    reranker, ctx = _build("cohere")
    assert reranker.rerank(QUERY, DOCS) == pytest.approx(EXPECTED)
    body = cohere_fake.requests[-1].json
    assert body["model"] == "rerank-v4.0-pro" and body["max_tokens_per_doc"] == 32768
    assert body["top_n"] == len(DOCS) and body["documents"] == DOCS
    assert ctx.usage.get("cohere_attempts") == 1 and ctx.usage.get("cohere_search_units") == 1


def test_cohere_fast_model_and_truncation_count(cohere_fake):
    reranker, ctx = _build("cohere", "rerank-v4.0-fast")
    long_doc = "cat " * 120_000  # ~160k estimated tokens, far over 32,768
    reranker.rerank(QUERY, [long_doc, "mat"])
    assert cohere_fake.requests[-1].json["model"] == "rerank-v4.0-fast"
    assert ctx.usage.get("rerank_documents_truncated") == 1 and ctx.usage.get("rerank_documents") == 2


def test_voyage_scores_align(voyage_fake):
    reranker, _ = _build("voyage")
    assert reranker.rerank(QUERY, DOCS) == pytest.approx(EXPECTED)
    body = voyage_fake.requests[-1].json
    assert body["model"] == "rerank-2.5" and body["truncation"] is True and body["top_k"] is None


def test_voyage_split_over_aggregate_limit_keeps_document_positions(voyage_fake):
    documents = [f"doc {i} " + ("cat " if i % 3 == 0 else "dog ") * 40 for i in range(12)]
    # One request would cost ~ 12 x (4 + 55) tokens in the fake's count; a 250-token budget forces splits.
    voyage_fake.aggregate_limit = 250
    reranker, ctx = _build("voyage", "rerank-2.5-lite", voyage_rerank_max_tokens=250)
    scores = reranker.rerank(QUERY, documents)
    assert scores == pytest.approx([relevance(QUERY, d) for d in documents])
    assert len(voyage_fake.batches) > 1
    assert [d for batch in voyage_fake.batches for d in batch] == documents  # every document once, in order
    for batch in voyage_fake.batches:
        assert voyage_fake.aggregate_tokens(QUERY, batch) <= 250
    assert ctx.usage.get("rerank_requests_split") == 1
    assert ctx.usage.get("voyage_requests") == len(voyage_fake.batches)


def test_voyage_unsplit_request_over_the_limit_is_rejected_without_retry(voyage_fake):
    voyage_fake.aggregate_limit = 10
    reranker, ctx = _build("voyage")
    with pytest.raises(ProviderError) as info:
        reranker.rerank(QUERY, DOCS)
    assert "400" in info.value.one_line()
    assert ctx.usage.get("voyage_attempts") == 1


def test_mixedbread_listwise_rerank(mixedbread_fake):
    reranker, ctx = _build("mixedbread")
    assert reranker.rerank(QUERY, DOCS) == pytest.approx(EXPECTED)
    body = mixedbread_fake.requests[-1].json
    assert body["model"] == "mixedbread-ai/mxbai-rerank-large-v2" and body["input"] == DOCS
    assert ctx.usage.get("mixedbread_tokens") == count_tokens(QUERY) + sum(count_tokens(d) for d in DOCS)


@pytest.mark.parametrize("provider", ["cohere", "voyage", "mixedbread"])
def test_429_with_retry_after_then_5xx_then_success(provider, request):
    fake = request.getfixturevalue(f"{provider}_fake")
    path = {"cohere": "/v2/rerank", "voyage": "/v1/rerank", "mixedbread": "/v1/reranking"}[provider]
    fake.fail(429, retry_after="0.05", path=path)
    fake.fail(503, path=path)
    reranker, ctx = _build(provider, max_attempts=4)
    assert reranker.rerank(QUERY, DOCS) == pytest.approx(EXPECTED)
    assert count_requests(fake, "POST", path) == 3
    assert ctx.usage.get(f"{provider}_attempts") == 3 and ctx.usage.get(f"{provider}_retries") == 2
    assert ctx.usage.get(f"{provider}_rate_limited") == 1


def test_persistent_5xx_exhausts_attempts_with_one_line(voyage_fake):
    voyage_fake.fail(500, times=10, path="/v1/rerank")
    reranker, ctx = _build("voyage", max_attempts=2)
    with pytest.raises(ProviderError) as info:
        reranker.rerank(QUERY, DOCS)
    assert "after 2 attempts" in info.value.one_line()
    assert count_requests(voyage_fake, "POST", "/v1/rerank") == 2


def test_missing_key_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("CO_API_KEY", raising=False)
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError) as info:
        _build("cohere")
    assert "COHERE_API_KEY" in info.value.one_line()


def test_unknown_model_lists_the_choices(cohere_fake):
    with pytest.raises(UsageError) as info:
        _build("cohere", "rerank-v9")
    assert "rerank-v4.0-pro" in info.value.one_line()

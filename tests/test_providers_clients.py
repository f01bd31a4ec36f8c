"""Each real SDK client as built by providers.clients: base URL and timeout from settings, SDK retries off."""

from __future__ import annotations

import pytest

from evals_repro.base.errors import ProviderError
from evals_repro.base.usage import Usage
from evals_repro.providers import clients
from evals_repro.providers.retry import call_with_retries
from evals_repro.providers.settings import provider_settings
from fakes.cohere import FakeCohere
from fakes.gemini import FakeGemini
from fakes.mixedbread import FakeMixedbread
from fakes.voyage import FakeVoyage


def voyage_call(client):
    return client.embed(["hello"], model="voyage-4")


def cohere_call(client):
    return client.embed(texts=["hello"], model="embed-v4.0", input_type="search_query", embedding_types=["float"])


def gemini_call(client):
    from google.genai import types

    return client.models.embed_content(
        model="gemini-embedding-2", contents=[types.Content(parts=[types.Part(text="hello")])]
    )


def mixedbread_call(client):
    return client.rerank(query="cat", input=["a dog", "a cat"], model="mixedbread-ai/mxbai-rerank-large-v2")


CASES = {
    "voyage": (FakeVoyage, "VOYAGE_BASE_URL", "/v1", "VOYAGE_API_KEY", clients.voyage_client, voyage_call),
    "cohere": (FakeCohere, "CO_API_URL", "", "CO_API_KEY", clients.cohere_client, cohere_call),
    "gemini": (FakeGemini, "GOOGLE_GEMINI_BASE_URL", "", "GEMINI_API_KEY", clients.gemini_client, gemini_call),
    "mixedbread": (
        FakeMixedbread,
        "MIXEDBREAD_BASE_URL",
        "",
        "MXBAI_API_KEY",
        clients.mixedbread_client,
        mixedbread_call,
    ),
}


@pytest.mark.parametrize("provider", sorted(CASES))
def test_sdk_retries_are_off_and_base_url_is_used(provider, monkeypatch):
    fake_cls, url_env, suffix, key_env, make, call = CASES[provider]
    with fake_cls() as fake:
        monkeypatch.setenv(url_env, fake.url + suffix)
        monkeypatch.setenv(key_env, "k-test")
        settings = provider_settings(provider, {"max_attempts": 1, "timeout": 5})
        client = make(settings)
        fake.fail(503)  # an SDK retry would succeed and hide the error
        with pytest.raises(ProviderError, match="after 1 attempts"):
            call_with_retries(settings, lambda: call(client), usage=Usage())
        assert len(fake.requests) == 1  # the SDK itself did not retry
        assert call_with_retries(settings, lambda: call(client), usage=Usage()) is not None


@pytest.mark.parametrize("provider", sorted(CASES))
def test_timeout_from_settings(provider, monkeypatch):
    from fakes.base import Reply

    fake_cls, url_env, suffix, key_env, make, call = CASES[provider]
    with fake_cls() as fake:
        monkeypatch.setenv(url_env, fake.url + suffix)
        monkeypatch.setenv(key_env, "k-test")
        settings = provider_settings(provider, {"max_attempts": 1, "timeout": 0.3})
        fake.script(Reply(200, sleep=1.2))
        with pytest.raises(ProviderError, match="no answer"):
            call_with_retries(settings, lambda: call(make(settings)), usage=Usage())


def test_cohere_base_url_follows_the_environment_each_time(monkeypatch):
    """Cohere reads CO_API_URL once per process; we read it at every client build instead."""
    monkeypatch.setenv("CO_API_KEY", "k-test")
    with FakeCohere() as first, FakeCohere() as second:
        for fake in (first, second):
            monkeypatch.setenv("CO_API_URL", fake.url)
            cohere_call(clients.cohere_client(provider_settings("cohere")))
        assert len(first.requests) == 1 and len(second.requests) == 1


def test_mixedbread_rerank_429_retry_after(monkeypatch):
    with FakeMixedbread() as fake:
        monkeypatch.setenv("MIXEDBREAD_BASE_URL", fake.url)
        monkeypatch.setenv("MXBAI_API_KEY", "k-test")
        settings = provider_settings("mixedbread", {"max_attempts": 3})
        client = clients.mixedbread_client(settings)
        fake.fail(429, retry_after="0.3")
        usage = Usage()
        result = call_with_retries(settings, lambda: mixedbread_call(client), usage=usage, what="rerank")
        assert [r.index for r in result.data] == [1, 0]
        assert fake.requests[1].received - fake.requests[0].received >= 0.3
        assert usage.get("mixedbread_rate_limited") == 1 and usage.get("mixedbread_attempts") == 2

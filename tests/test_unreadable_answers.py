"""A 200 whose body is cut short or unreadable is retried like a 5xx, counted as an attempt, and the final
error shows at most a short excerpt of the body (real SDK clients against fakes that cut their answers)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evals_repro.base.errors import ProviderError
from evals_repro.base.registry import RERANKERS
from evals_repro.embedders.base import EmbedItem
from evals_repro.embedders.registry import build_embedder
from evals_repro.providers import errors_map, retry
from evals_repro.retrieval.base import MethodContext
from fakes.base import Reply, Request, bag_of_words
from fakes.cohere import FakeCohere
from fakes.gemini import FakeGemini
from fakes.mixedbread import FakeMixedbread
from fakes.rerankers import FakeCohereRerank, FakeVoyageRerank, relevance
from fakes.voyage import FakeVoyage

TEXTS = ["the cat sat on the mat", "dogs chase cats", "stock markets fell sharply"]
PADDING = "x" * 5000  # answers are long: the error must not carry them


def cutting(fake_class):
    """The fake, except that its next `cut` answers are its real (padded) JSON cut in half."""

    class Cutting(fake_class):
        cut = 0

        def dispatch(self, request: Request) -> Reply:
            reply = super().dispatch(request)
            if self.cut and reply.status == 200 and reply.json is not None:
                self.cut -= 1
                body = json.dumps({**reply.json, "padding": PADDING}).encode()
                return Reply(200, raw=body[: len(body) // 2])
            return reply

    return Cutting


ENV = {
    "voyage": ("VOYAGE_BASE_URL", "VOYAGE_API_KEY", "/v1"),
    "cohere": ("CO_API_URL", "CO_API_KEY", ""),
    "gemini": ("GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY", ""),
    "mixedbread": ("MIXEDBREAD_BASE_URL", "MXBAI_API_KEY", ""),
}


def embed(method: str, ctx: MethodContext):
    matrix = build_embedder(method, ctx).embed([EmbedItem(text=t) for t in TEXTS], "document")
    np.testing.assert_allclose(matrix, np.vstack([bag_of_words(t) for t in TEXTS]), atol=1e-6)


def rerank(name: str, ctx: MethodContext):
    reranker = RERANKERS.require(name).factory(name, None, ctx)
    assert reranker.rerank("cat on mat", TEXTS) == pytest.approx([relevance("cat on mat", t) for t in TEXTS])


CASES = {
    "voyage-embed": ("voyage", FakeVoyage, lambda ctx: embed("voyage-4-lite", ctx)),
    "cohere-embed": ("cohere", FakeCohere, lambda ctx: embed("cohere-embed-v4.0", ctx)),
    "gemini-embed": ("gemini", FakeGemini, lambda ctx: embed("gemini-embedding-2-noprompt", ctx)),
    "voyage-rerank": ("voyage", FakeVoyageRerank, lambda ctx: rerank("voyage", ctx)),
    "cohere-rerank": ("cohere", FakeCohereRerank, lambda ctx: rerank("cohere", ctx)),
    "mixedbread-rerank": ("mixedbread", FakeMixedbread, lambda ctx: rerank("mixedbread", ctx)),
}


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setattr(retry, "BACKOFF_BASE", 0.01)


def serve(case: str, monkeypatch):
    provider, fake_class, call = CASES[case]
    fake = cutting(fake_class)()
    url_env, key_env, suffix = ENV[provider]
    fake.__enter__()
    monkeypatch.setenv(url_env, fake.url + suffix)
    monkeypatch.setenv(key_env, "cut-test-key-0123456789")
    return provider, fake, call


@pytest.mark.parametrize("case", sorted(CASES))
def test_cut_200_is_retried_and_counted(case, monkeypatch):
    provider, fake, call = serve(case, monkeypatch)
    try:
        fake.cut = 1
        ctx = MethodContext(benchmark="cut", options={"timeout": 5, "max_attempts": 3})
        call(ctx)  # the answer of the retry is used, and it is the right one
        assert len(fake.requests) == 2 and fake.cut == 0
        assert ctx.usage.get(f"{provider}_attempts") == 2 and ctx.usage.get(f"{provider}_retries") == 1
    finally:
        fake.__exit__(None, None, None)


@pytest.mark.parametrize("case", ["voyage-embed", "cohere-rerank", "gemini-embed", "mixedbread-rerank"])
def test_cut_200_every_time_fails_with_a_short_excerpt(case, monkeypatch):
    provider, fake, call = serve(case, monkeypatch)
    try:
        fake.cut = 3
        ctx = MethodContext(benchmark="cut", options={"timeout": 5, "max_attempts": 3})
        with pytest.raises(ProviderError) as info:
            call(ctx)
        assert len(fake.requests) == 3 and ctx.usage.get(f"{provider}_attempts") == 3
    finally:
        fake.__exit__(None, None, None)
    line = info.value.one_line()
    assert "after 3 attempts" in line and "unreadable" in line
    assert "xxxxxxxxxx" * (errors_map.EXCERPT // 10 + 1) not in line  # at most a short excerpt of the body
    assert len(line) < 600 and "\n" not in line
    assert "cut-test-key" not in line

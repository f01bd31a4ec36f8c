"""A per-minute budget smaller than one batch shrinks the batches (embeddings) or splits the request
(hosted rerankers) instead of waiting forever.

The fake enforces its token budget over a 1 s window (the scaled-down minute) and refuses, with a 429,
any request that does not fit, including one larger than the whole budget: such a request could never
be accepted. The harness gets the same budget.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from evals_repro.base.errors import UsageError
from evals_repro.base.registry import RERANKERS
from evals_repro.embedders.base import EmbedItem
from evals_repro.embedders.registry import build_embedder
from evals_repro.providers import retry
from evals_repro.retrieval.base import MethodContext
from fakes.base import Reply, Request, bag_of_words, count_tokens
from fakes.rerankers import FakeVoyageRerank, relevance
from fakes.voyage import FakeVoyage

BUDGET = 300  # tokens per 1 s window
TEXTS = [f"page {i} " + " ".join(f"word{j}" for j in range(i % 7, i % 7 + 30)) for i in range(20)]


class BudgetWindow:
    """Admits a request only when its tokens fit BUDGET over the last second; records every size asked."""

    def __init__(self) -> None:
        super().__init__()
        self.accepted: deque[tuple[float, int]] = deque()
        self.sizes: list[tuple[int, bool]] = []
        self.budget_lock = threading.Lock()

    request_tokens: Callable[[dict], int]  # each fake counts its own request the service's way

    def before(self, request: Request) -> Reply | None:
        tokens = self.request_tokens(request.json)
        with self.budget_lock:
            now = time.monotonic()
            while self.accepted and now - self.accepted[0][0] >= 1.0:
                self.accepted.popleft()
            ok = sum(t for _, t in self.accepted) + tokens <= BUDGET
            self.sizes.append((tokens, ok))
            if ok:
                self.accepted.append((now, tokens))
                return None
        return self.error_reply(429, "rate limit exceeded: tokens per minute")  # type: ignore[attr-defined]


class StrictVoyage(BudgetWindow, FakeVoyage):
    def request_tokens(self, body: dict) -> int:
        return sum(count_tokens(t) for t in body["input"])


def serve(monkeypatch, fake_class):
    """Run a strict fake with the real voyageai client pointed at it (fast backoff)."""
    monkeypatch.setattr(retry, "BACKOFF_BASE", 0.05)
    with fake_class() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        yield fake


@pytest.fixture
def strict(monkeypatch):
    yield from serve(monkeypatch, StrictVoyage)


def embedder(**options):
    ctx = MethodContext(benchmark="x", options={"workers": 2, "timeout": 5, "max_attempts": 4, **options})
    built = build_embedder("voyage-4-lite", ctx)
    built.settings = replace(built.settings, window=1.0, tokens_per_minute=BUDGET, requests_per_minute=0)
    return built, ctx


def test_budget_smaller_than_one_batch_shrinks_the_batches(strict):
    built, ctx = embedder()
    all_tokens = sum(count_tokens(t) for t in TEXTS)
    assert all_tokens > 2 * BUDGET  # unshrunk, this is one request the fake can never accept
    started = time.monotonic()
    matrix = built.embed([EmbedItem(text=t) for t in TEXTS], "document")
    np.testing.assert_allclose(matrix, np.vstack([bag_of_words(t) for t in TEXTS]), atol=1e-6)
    assert time.monotonic() - started < 20
    assert all(tokens <= BUDGET for tokens, _ in strict.sizes)
    assert len(strict.sizes) >= 3 and ctx.usage.get("voyage_rate_limited") <= 1


def test_item_larger_than_the_whole_budget_is_refused_at_once(strict):
    built, _ = embedder()
    with pytest.raises(UsageError) as info:
        built.embed([EmbedItem(text="word " * 2000)], "document")
    assert "more than the whole budget of 300 tokens per minute" in info.value.one_line()
    assert "raise --voyage-tpm" in info.value.one_line()
    assert strict.requests == []


# -- hosted rerankers: a request over the whole budget is split, not sent to be refused forever ------------
QUERY = "cat on mat"
DOCUMENTS = [f"doc {i} " + ("cat " if i % 3 == 0 else "dog ") * 40 for i in range(12)]


class StrictVoyageRerank(BudgetWindow, FakeVoyageRerank):
    """Voyage's rerank route with the same budget, counted as the service counts a rerank."""

    def request_tokens(self, body: dict) -> int:
        return self.aggregate_tokens(body["query"], body["documents"])


@pytest.fixture
def strict_rerank(monkeypatch):
    yield from serve(monkeypatch, StrictVoyageRerank)


def reranker():
    ctx = MethodContext(benchmark="x", options={"timeout": 5, "max_attempts": 4})
    built = RERANKERS.require("voyage").factory("voyage", None, ctx)
    built.settings = replace(built.settings, window=1.0, tokens_per_minute=BUDGET, requests_per_minute=0)
    return built, ctx


def test_rerank_request_over_the_whole_budget_is_split(strict_rerank):
    whole = strict_rerank.aggregate_tokens(QUERY, DOCUMENTS)
    assert whole > BUDGET  # unsplit, this is one request the fake can never accept
    built, ctx = reranker()
    started = time.monotonic()
    scores = built.rerank(QUERY, DOCUMENTS)
    assert scores == pytest.approx([relevance(QUERY, d) for d in DOCUMENTS])
    assert time.monotonic() - started < 20
    assert [d for batch in strict_rerank.batches for d in batch] == DOCUMENTS  # every document once, in order
    assert len(strict_rerank.batches) >= 2
    assert all(tokens <= BUDGET for tokens, _ in strict_rerank.sizes)
    assert ctx.usage.get("rerank_requests_split") == 1 and ctx.usage.get("voyage_rate_limited") <= 1


def test_rerank_document_larger_than_the_whole_budget_is_refused_at_once(strict_rerank):
    built, _ = reranker()
    with pytest.raises(UsageError) as info:
        built.rerank(QUERY, ["short", "word " * 2000])
    line = info.value.one_line()
    assert "rerank rerank-2.5: item 1 needs about" in line and "whole budget of 300 tokens per minute" in line
    assert "raise --voyage-tpm" in line
    assert strict_rerank.requests == []

"""A per-minute budget smaller than one batch shrinks the batches instead of waiting forever.

The fake enforces its token budget over a 1 s window (the scaled-down minute) and refuses, with a 429,
any request that does not fit, including one larger than the whole budget: such a request could never
be accepted. The harness gets the same budget.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import replace

import numpy as np
import pytest

from evals_repro.embedders.base import EmbedItem
from evals_repro.embedders.registry import build_embedder
from evals_repro.errors import UsageError
from evals_repro.providers import retry
from evals_repro.retrieval.base import MethodContext
from fakes.base import Reply, Request, bag_of_words, count_tokens
from fakes.voyage import FakeVoyage

BUDGET = 300  # tokens per 1 s window
TEXTS = [f"page {i} " + " ".join(f"word{j}" for j in range(i % 7, i % 7 + 30)) for i in range(20)]


class StrictVoyage(FakeVoyage):
    def __init__(self) -> None:
        super().__init__()
        self.accepted: deque[tuple[float, int]] = deque()
        self.sizes: list[tuple[int, bool]] = []
        self.budget_lock = threading.Lock()

    def before(self, request: Request) -> Reply | None:
        tokens = sum(count_tokens(t) for t in request.json["input"])
        with self.budget_lock:
            now = time.monotonic()
            while self.accepted and now - self.accepted[0][0] >= 1.0:
                self.accepted.popleft()
            ok = sum(t for _, t in self.accepted) + tokens <= BUDGET
            self.sizes.append((tokens, ok))
            if ok:
                self.accepted.append((now, tokens))
                return None
        return self.error_reply(429, "rate limit exceeded: tokens per minute")


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setattr(retry, "BACKOFF_BASE", 0.05)
    with StrictVoyage() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        yield fake


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

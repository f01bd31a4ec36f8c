"""Sustained Gemini and Cohere throughput under a budget matched to the server's, against fakes that enforce it.

Each fake answers 429 (no Retry-After, a plain budget overrun) when a request would push what it accepted
in the last second over its budget: Gemini counts tokens with its own tokenizer (`count_tokens`, which it
also reports in `usageMetadata.promptTokenCount`, as the Gemini API does), Cohere counts inputs (its
production limit is 2,000 inputs per minute). The harness's throttle gets the same budget per 1 s window.
Goal (issue 15): steady throughput >= 0.95 of the budget with <= 1% of requests answered 429. A peer run
with no client budget (retries only) is printed beside it.
Run: `flock /work/coord/perf.lock uv run pytest -m perf -s tests/perf/test_provider_throughput.py`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import replace

import pytest

from evals_repro.embedders.base import EmbedItem
from evals_repro.embedders.registry import build_embedder
from evals_repro.providers import retry
from evals_repro.retrieval.base import MethodContext
from fakes.base import Reply, Request, count_tokens
from fakes.cohere import FakeCohere
from fakes.gemini import FakeGemini, content_text

pytestmark = pytest.mark.perf

WINDOW = 1.0
ITEMS = 3_000
BATCH = 16
WORDS = "retrieval evaluation reproduces published scores across benchmarks with pinned data".split()


class Budgeted:
    """A sliding one-second budget over what the fake accepted, counted by `cost(request)`."""

    def __init__(self, budget: int, window: float) -> None:
        super().__init__()
        self.budget, self.window = budget, window
        self.accepted: deque[tuple[float, int]] = deque()
        self.log: list[tuple[float, int, bool]] = []  # (time, cost, accepted)
        self.budget_lock = threading.Lock()

    def cost(self, request: Request) -> int:
        raise NotImplementedError

    def before(self, request: Request) -> Reply | None:
        cost = self.cost(request)
        with self.budget_lock:
            now = time.monotonic()
            while self.accepted and now - self.accepted[0][0] >= self.window:
                self.accepted.popleft()
            used = sum(c for _, c in self.accepted)
            ok = used + cost <= self.budget or not self.accepted
            self.log.append((now, cost, ok))
            if ok:
                self.accepted.append((now, cost))
                return None
        return self.error_reply(429, "rate limit exceeded")


class BudgetedGemini(Budgeted, FakeGemini):
    def cost(self, request: Request) -> int:  # tokens, as the fake counts and reports them
        return sum(count_tokens(content_text(r["content"])) for r in request.json["requests"])


class BudgetedCohere(Budgeted, FakeCohere):
    def cost(self, request: Request) -> int:  # inputs
        return len(request.json.get("texts") or request.json.get("inputs") or [])


def texts(n: int) -> list[str]:
    return [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(40 + i % 20)) for i in range(n)]


PROVIDERS = {
    # provider: (fake, method, budget per window, environment, settings field of the budget)
    "gemini": (
        BudgetedGemini,
        "gemini-embedding-2",
        20_000,
        ("GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY", ""),
        "tokens",
    ),
    "cohere": (BudgetedCohere, "cohere-embed-v4.0", 400, ("CO_API_URL", "CO_API_KEY", ""), "items"),
}


def run(monkeypatch, provider: str, throttled: bool, items: int, reported: bool = True) -> dict:
    from evals_repro.providers.throttle import reset_throttles

    reset_throttles()  # each run learns its ratio from scratch
    fake_class, method, budget, (url_env, key_env, suffix), kind = PROVIDERS[provider]
    with fake_class(budget, WINDOW) as fake:
        fake.report_usage = reported
        monkeypatch.setenv(key_env, "perf-key")
        monkeypatch.setenv(url_env, fake.url + suffix)
        ctx = MethodContext(benchmark="perf", options={"max_attempts": 30, "workers": 4, "timeout": 30})
        embedder = build_embedder(method, ctx)
        embedder.settings = replace(
            embedder.settings,
            window=WINDOW,
            max_batch_items=BATCH,
            tokens_per_minute=budget if throttled and kind == "tokens" else 0,
            items_per_minute=budget if throttled and kind == "items" else 0,
            requests_per_minute=0,
        )
        start = time.monotonic()
        matrix = embedder.embed([EmbedItem(text=t) for t in texts(items)], "document")
        elapsed = time.monotonic() - start
        assert matrix.shape[0] == items
        log = fake.log
    accepted = [(t, n) for t, n, ok in log if ok]
    # Steady state: whole windows after the opening burst; any one window may hold at most the budget.
    start_steady = accepted[0][0] + WINDOW
    windows = int((accepted[-1][0] - start_steady) // WINDOW)
    assert windows >= 3, "run too short to measure a steady state"
    steady = sum(n for t, n in accepted if start_steady <= t < start_steady + windows * WINDOW)
    return {
        "requests": len(log),
        "rejected_429": sum(1 for _, _, ok in log if not ok),
        "rate_429": sum(1 for _, _, ok in log if not ok) / len(log),
        "accepted": sum(n for _, n in accepted),
        "kind": kind,
        "elapsed": elapsed,
        "steady_fraction": steady / (windows * WINDOW) / (budget / WINDOW),
        "overall_fraction": sum(n for _, n in accepted) / elapsed / (budget / WINDOW),
    }


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_throughput_under_matched_budget(monkeypatch, provider):
    monkeypatch.setattr(retry, "BACKOFF_BASE", 0.05)
    throttled = run(monkeypatch, provider, throttled=True, items=ITEMS)
    peer = run(monkeypatch, provider, throttled=False, items=ITEMS)
    runs = [("throttled", throttled), ("no throttle (peer)", peer)]
    if provider == "gemini":  # what the estimate alone gives when the provider reports no counts
        runs.append(
            ("throttled, no reported counts", run(monkeypatch, provider, throttled=True, items=ITEMS, reported=False))
        )
    for label, f in runs:
        print(
            f"\n{provider} {label}: {f['requests']} requests, {f['rejected_429']} answered 429 ({f['rate_429']:.2%}), "
            f"{f['accepted']:,} {f['kind']} in {f['elapsed']:.1f} s; steady throughput {f['steady_fraction']:.1%} "
            f"of budget, overall {f['overall_fraction']:.1%}"
        )
    assert throttled["steady_fraction"] >= 0.95
    assert throttled["rate_429"] <= 0.01

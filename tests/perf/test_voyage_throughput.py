"""Sustained Voyage throughput under a token budget, against a fake that enforces it (per second, not minute).

The fake answers 429 (no Retry-After, as a plain budget overrun) when a request would push the tokens it
accepted in the last second over the budget. The harness's throttle is given the same budget per 1 s
window. Side by side, a peer run with no client throttle (retries only) shows what the throttle buys.
Goal (issue 15): steady throughput >= 0.95 of the budget with <= 1% of requests answered 429;
the test fails otherwise. EVALS_REPRO_PERF_VOYAGE_ITEMS (default 3000) lengthens the run.
Run: `uv run pytest -m perf -s tests/perf/test_voyage_throughput.py`.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from throughput import Budgeted, log_figures, timed_embed

from evals_repro.embedders.registry import build_embedder
from evals_repro.providers import retry
from evals_repro.retrieval.base import MethodContext
from fakes.base import Request, count_tokens
from fakes.voyage import FakeVoyage

pytestmark = pytest.mark.perf

BUDGET = 20_000  # tokens per second (the scaled-down tokens per minute)
WINDOW = 1.0
ITEMS = int(os.environ.get("EVALS_REPRO_PERF_VOYAGE_ITEMS", "3000"))
THROUGHPUT_GOAL = 0.95
RATE_429_GOAL = 0.01
BATCH = 16


class BudgetedVoyage(Budgeted, FakeVoyage):
    """A Voyage fake with a sliding one-second token budget, counting tokens as the server does."""

    message = "rate limit exceeded: tokens per minute"

    def cost(self, request: Request) -> int:
        return sum(count_tokens(t) for t in request.json["input"])


def run(monkeypatch, throttled: bool, items: int) -> dict:
    with BudgetedVoyage(BUDGET, WINDOW) as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "perf-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        ctx = MethodContext(benchmark="perf", options={"max_attempts": 30, "workers": 4, "timeout": 30})
        embedder = build_embedder("voyage-4", ctx)
        embedder.settings = replace(
            embedder.settings,
            window=WINDOW,
            max_batch_items=BATCH,
            tokens_per_minute=BUDGET if throttled else 0,
            requests_per_minute=0,
        )
        elapsed = timed_embed(embedder, items)
        log = fake.log
    return {**log_figures(log, BUDGET, WINDOW, elapsed), "usage": ctx.usage.as_dict()}


def test_voyage_throughput_under_budget(monkeypatch):
    monkeypatch.setattr(retry, "BACKOFF_BASE", 0.05)
    throttled = run(monkeypatch, throttled=True, items=ITEMS)
    peer = run(monkeypatch, throttled=False, items=ITEMS)
    for label, figures in (("throttled", throttled), ("no throttle (peer)", peer)):
        print(
            f"\n{label}: {figures['requests']} requests, {figures['rejected_429']} answered 429 "
            f"({figures['rate_429']:.2%}), {figures['accepted']:,} tokens in {figures['elapsed']:.1f} s; "
            f"steady throughput {figures['steady_fraction']:.1%} of budget, overall {figures['overall_fraction']:.1%}"
        )
    print(f"429 rate ratio (throttled / peer): {throttled['rate_429'] / max(peer['rate_429'], 1e-9):.3f}")
    print(
        f"throttled: steady throughput {throttled['steady_fraction']:.3f} of budget (goal >= {THROUGHPUT_GOAL}), "
        f"429s {throttled['rate_429']:.2%} (goal <= {RATE_429_GOAL:.0%})"
    )
    assert throttled["steady_fraction"] >= THROUGHPUT_GOAL
    assert throttled["rate_429"] <= RATE_429_GOAL

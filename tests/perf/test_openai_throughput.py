"""`openai:<model>` throughput: a matched per-minute budget, and replicas against a fixed per-request latency.

1. Budget: a fake OpenAI-compatible server that answers 429 (OpenAI's error body, no Retry-After) when a
   request would push the tokens it accepted in the last second over its budget; it counts tokens with its
   own tokenizer and reports them in `usage.prompt_tokens`, as the servers do. The harness's throttle gets
   the same budget per 1 s window. Goal (issue 19): steady throughput >= 0.95 of the budget with <= 1% of
   requests answered 429. A peer run with no client budget (retries only) is printed beside it.
2. Replicas: fakes that serve one request at a time, each taking a fixed 50 ms (a GPU's worth of capacity:
   more concurrency on one replica does not help). The same embedding run on one replica, then on two,
   side by side. Goal: two give >= 1.8x the throughput of one.
Run: `flock /work/coord/perf.lock uv run pytest -m perf -s tests/perf/test_openai_throughput.py`.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from throughput import Budgeted, log_figures, timed_embed

from evals_repro.base.context import MethodContext
from evals_repro.embedders.registry import build_embedder
from evals_repro.providers import retry
from fakes.base import Request
from fakes.openai_compat import FakeOpenAICompatible

pytestmark = pytest.mark.perf

MODEL = "intfloat/e5-small-v2"
WINDOW = 1.0
BUDGET = 20_000  # tokens per window
ITEMS = 3_000
BATCH = 16


class BudgetedOpenAI(Budgeted, FakeOpenAICompatible):
    def before(self, request: Request):
        return super().before(request) if request.path.endswith("/embeddings") else None  # /v1/models is free

    def cost(self, request: Request) -> int:  # tokens, as the fake counts and reports them
        body = request.json
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return sum(len(self.tokens(text)) for text in inputs)


def budget_run(monkeypatch, throttled: bool) -> dict:
    from evals_repro.providers.throttle import reset_throttles

    reset_throttles()  # each run learns its ratio from scratch
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with BudgetedOpenAI(BUDGET, WINDOW) as fake:
        options = {"base_url": f"{fake.url}/v1", "max_attempts": 30, "workers": 4, "timeout": 30}
        embedder = build_embedder(f"openai:{MODEL}", MethodContext(benchmark="perf", options=options))
        embedder.settings = replace(
            embedder.settings,
            window=WINDOW,
            max_batch_items=BATCH,
            tokens_per_minute=BUDGET if throttled else 0,
            requests_per_minute=0,
        )
        elapsed = timed_embed(embedder, ITEMS)
        return log_figures(fake.log, BUDGET, WINDOW, elapsed)


def test_budget_matched_to_the_server(monkeypatch):
    monkeypatch.setattr(retry, "BACKOFF_BASE", 0.05)
    throttled = budget_run(monkeypatch, throttled=True)
    peer = budget_run(monkeypatch, throttled=False)
    for label, f in (("throttled", throttled), ("no throttle (peer)", peer)):
        print(
            f"\nopenai {label}: {f['requests']} requests, {f['rejected_429']} answered 429 ({f['rate_429']:.2%}), "
            f"{f['accepted']:,} tokens in {f['elapsed']:.1f} s; steady throughput {f['steady_fraction']:.1%} "
            f"of budget, overall {f['overall_fraction']:.1%}"
        )
    assert throttled["steady_fraction"] >= 0.95
    assert throttled["rate_429"] <= 0.01


REPLICA_ITEMS = 480
REPLICA_BATCH = 4  # 120 requests of 50 ms each: 6 s on one replica
LATENCY = 0.05


def replica_run(fakes: list[FakeOpenAICompatible]) -> float:
    urls = ",".join(f"{fake.url}/v1" for fake in fakes)
    options = {"base_url": urls, "batch_size": REPLICA_BATCH, "workers": 4}
    embedder = build_embedder(f"openai:{MODEL}", MethodContext(benchmark="perf", options=options))
    return timed_embed(embedder, REPLICA_ITEMS)


def test_two_replicas_against_one(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with (
        FakeOpenAICompatible(MODEL, latency=LATENCY, serial=True) as a,
        FakeOpenAICompatible(MODEL, latency=LATENCY, serial=True) as b,
    ):
        one = replica_run([a])
        two = replica_run([a, b])
        shares = (len(a.embed_inputs), len(b.embed_inputs))
    ratio = one / two
    requests = REPLICA_ITEMS // REPLICA_BATCH
    print(
        f"\nopenai replicas: one {one:.2f} s, two {two:.2f} s for {requests} requests of {LATENCY * 1000:.0f} ms "
        f"(serial per replica); throughput ratio {ratio:.2f}x; requests per replica over both runs {shares}"
    )
    assert ratio >= 1.8

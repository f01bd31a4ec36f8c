"""What the throughput benchmarks share, so that every provider is measured the same way: fakes that enforce
a sliding budget on what they accept, the texts they embed, one timed embedding run, and the figures read
off the fake's log (steady state after the opening burst, overall, 429 rate)."""

from __future__ import annotations

import threading
import time
from collections import deque

from evals_repro.embedders.base import EmbedItem
from fakes.base import Reply, Request

WORDS = "retrieval evaluation reproduces published scores across benchmarks with pinned data".split()


class Budgeted:
    """Mixin for a provider fake: a sliding `window`-second budget over what it accepted, counted by
    `cost(request)`; a request that would go over it is answered 429 with `message` (no Retry-After, a
    plain budget overrun). `log` holds (time, cost, accepted) per request."""

    message = "rate limit exceeded"

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
        return self.error_reply(429, self.message)  # the provider fake's own error body


def texts(n: int) -> list[str]:
    return [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(40 + i % 20)) for i in range(n)]


def timed_embed(embedder, items: int) -> float:
    """Seconds to embed `items` documents (every row must come back)."""
    start = time.monotonic()
    matrix = embedder.embed([EmbedItem(text=t) for t in texts(items)], "document")
    elapsed = time.monotonic() - start
    assert matrix.shape[0] == items
    return elapsed


def log_figures(log: list[tuple[float, int, bool]], budget: int, window: float, elapsed: float) -> dict:
    """Requests, 429s and throughput as fractions of the budget: steady (whole windows after the opening
    burst) and overall."""
    accepted = [(t, n) for t, n, ok in log if ok]
    start_steady = accepted[0][0] + window
    windows = int((accepted[-1][0] - start_steady) // window)
    assert windows >= 3, "run too short to measure a steady state"
    steady = sum(n for t, n in accepted if start_steady <= t < start_steady + windows * window)
    rejected = sum(1 for _, _, ok in log if not ok)
    return {
        "requests": len(log),
        "rejected_429": rejected,
        "rate_429": rejected / len(log),
        "accepted": sum(n for _, n in accepted),
        "elapsed": elapsed,
        "steady_fraction": steady / (windows * window) / (budget / window),
        "overall_fraction": sum(n for _, n in accepted) / elapsed / (budget / window),
    }

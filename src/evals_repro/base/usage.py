"""What a run spent: requests, attempts, tokens, cache hits. Written to result files and printed.

Beside the counters, `billed` holds what each provider model bills for (input and output tokens,
pixels, searches, store tokens), as the provider counted it where it says: `cost` prices it; `self_hosted`
counts the calls to models on servers of your own, which bill nothing and have no price (so a cost says so
rather than $0 or "not recorded").
"""

from __future__ import annotations

import threading


class Usage:
    """Thread-safe counters keyed by name (requests, attempts, retries, tokens, cache_hits, ...)."""

    def __init__(self) -> None:
        self._counts: dict[str, int | float] = {}  # some counts are seconds (waits), so not a Counter of ints
        self._billed: dict[tuple[str, str, str], float] = {}  # (provider, model, unit) -> amount
        self._served: dict[tuple[str, str], int] = {}  # (provider, model) on your own servers -> calls
        self._lock = threading.Lock()

    def add(self, key: str, amount: int | float = 1) -> None:
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + amount

    def get(self, key: str) -> int | float:
        with self._lock:
            return self._counts.get(key, 0)

    def as_dict(self) -> dict[str, int | float]:
        with self._lock:
            return dict(sorted(self._counts.items()))

    def bill(self, provider: str, model: str, units: dict[str, float]) -> None:
        """Count what one call bills for: {unit: amount} for this provider model."""
        with self._lock:
            for unit, amount in units.items():
                if amount:
                    key = (provider, model, unit)
                    self._billed[key] = self._billed.get(key, 0) + amount

    def billed(self) -> dict[tuple[str, str, str], float]:
        with self._lock:
            return dict(sorted(self._billed.items()))

    def self_hosted(self, provider: str, model: str, calls: int = 1) -> None:
        """Count a call to a model on a server of your own: no bill, no price."""
        with self._lock:
            self._served[(provider, model)] = self._served.get((provider, model), 0) + calls

    def served(self) -> dict[tuple[str, str], int]:
        """(provider, model) -> calls made to servers of your own."""
        with self._lock:
            return dict(sorted(self._served.items()))

    def served_labels(self) -> list[str]:
        """The "provider model" of every self-hosted model called, as costs name them."""
        return [f"{provider} {model}" for provider, model in self.served()]

    def merge(self, other: Usage) -> None:
        for key, value in other.as_dict().items():
            self.add(key, value)
        for (provider, model, unit), amount in other.billed().items():
            self.bill(provider, model, {unit: amount})
        for (provider, model), calls in other.served().items():
            self.self_hosted(provider, model, calls)

    def summary(self) -> str:
        counts = self.as_dict()
        if not counts:
            return "no API requests"
        return ", ".join(f"{key.replace('_', ' ')} {_shown(value)}" for key, value in counts.items())


def _shown(value: int | float) -> str:
    """Counts as they are; seconds (floats) to a tenth: 242.10103580799998 reads 242.1."""
    return f"{value:,.1f}" if isinstance(value, float) else f"{value:,}"

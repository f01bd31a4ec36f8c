"""A second plugin whose names clash: with built-ins (bm25, cohere, sample) and with the demo plugin (demo-twin)."""

from pathlib import Path

BENCHMARKS = Path(__file__).parent


class Twin:
    """The twin's `demo-twin`."""

    name = "demo-twin"

    def run(self, subset, queries, top_k):
        return {}

    def describe(self):
        return {}

"""The Reranker protocol: one query and its candidate texts in, one score per candidate out."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Reranker(Protocol):
    name: str  # registry name, e.g. "cohere"
    model: str  # provider model id, e.g. "rerank-v4.0-pro"

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        """Scores aligned with `documents` (input order, not rank order); higher is better.

        Raises ProviderError when the provider fails past the retry policy: never a partial list.
        """
        ...

    def describe(self) -> dict[str, Any]:
        """Settings that change the scores (model, truncation limits), for result files."""
        ...

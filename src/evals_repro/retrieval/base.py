"""The protocol every method implements, from BM25 to a hosted store behind a reranker."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..base.context import MethodContext
from ..base.data import Query, Run, Subset

__all__ = ["MethodContext", "Retriever"]


@runtime_checkable
class Retriever(Protocol):
    """`run` returns, for each query, up to `top_k` scored page ids (the pytrec_eval run shape)."""

    name: str

    def run(self, subset: Subset, queries: list[Query], top_k: int) -> Run: ...

    def describe(self) -> dict[str, Any]:
        """Settings that determine the scores, recorded in the result file."""
        ...

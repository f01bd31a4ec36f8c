"""The protocol every method implements, from BM25 to a hosted store behind a reranker."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..data import Query, Run, Subset
from ..usage import Usage


@dataclass
class MethodContext:
    """What a method needs from the run: where to cache, which content, tuning options."""

    benchmark: str
    cache_dir: Path = Path("cache")
    content: str = "markdown"  # or "images"
    options: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)


@runtime_checkable
class Retriever(Protocol):
    """`run` returns, for each query, up to `top_k` scored page ids (the pytrec_eval run shape)."""

    name: str

    def run(self, subset: Subset, queries: list[Query], top_k: int) -> Run: ...

    def describe(self) -> dict[str, Any]:
        """Settings that determine the scores, recorded in the result file."""
        ...

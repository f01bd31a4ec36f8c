"""A reranker over any first stage: rerank the top `depth` candidates, keep the rest below them.

Candidates past the depth keep their first-stage order and are placed under every reranked
score, so ranks 1..depth are the reranker's and the metrics there are meaningful; metrics at
cut-offs deeper than `depth` mix two rankings and are flagged through `meaningful_depth`.
"""

from __future__ import annotations

from typing import Any

from ..data import Page, Query, Run, Subset, ranked
from ..errors import UsageError
from ..retrieval.parallel import run_queries
from .base import Reranker


def page_document(page: Page) -> str:
    """The text a reranker sees: the full page markdown, the title first when there is one."""
    if page.title:
        return f"{page.title}\n\n{page.text}"
    return page.text


def merge_reranked(candidates: list[tuple[str, float]], depth: int, scores: list[float]) -> dict[str, float]:
    """Reranked head (reranker scores) over the untouched tail (first-stage order kept, scored below)."""
    head = candidates[:depth]
    if len(scores) != len(head):
        raise ValueError(f"reranker returned {len(scores)} scores for {len(head)} documents")
    merged = {doc_id: float(score) for (doc_id, _), score in zip(head, scores)}
    floor = min(merged.values(), default=0.0) - 1.0
    for position, (doc_id, _) in enumerate(candidates[depth:], start=1):
        merged[doc_id] = floor - position
    return merged


class RerankedRetriever:
    """`<first stage>+<reranker>@<depth>`: the Retriever protocol around a first stage and a Reranker."""

    def __init__(
        self, first: Any, reranker: Reranker, depth: int, name: str | None = None, workers: int | None = None
    ) -> None:
        self.first = first
        self.reranker = reranker
        self.depth = int(depth)
        self.name = name or f"{first.name}+{reranker.name}@{self.depth}"
        chosen: int = workers or getattr(reranker, "workers", None) or 4
        self.workers = max(1, int(chosen))

    @property
    def meaningful_depth(self) -> int:
        """Metrics at cut-offs above this depth are not the reranker's alone; the runner flags them."""
        return self.depth

    def run(self, subset: Subset, queries: list[Query], top_k: int) -> Run:
        if self.depth > top_k:
            raise UsageError(
                f"method {self.name}: rerank depth {self.depth} is larger than the first stage's top-k {top_k}",
                f"raise --top-k to at least {self.depth} or lower the depth (+{self.reranker.name}@{top_k})",
            )
        first_run = self.first.run(subset, queries, top_k)
        pages = subset.page_by_id()

        def rerank_one(query: Query) -> dict[str, float]:
            candidates = ranked(first_run.get(query.id, {}), top_k)
            head = candidates[: self.depth]
            documents = [page_document(pages[doc_id]) for doc_id, _ in head]
            scores = self.reranker.rerank(query.text, documents) if documents else []
            return merge_reranked(candidates, self.depth, scores)

        return run_queries(f"rerank {subset.name} ({self.reranker.name})", queries, self.workers, rerank_one)

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "first_stage": self.first.describe(),
            "reranker": self.reranker.describe(),
            "rerank_depth": self.depth,
            "meaningful_depth": self.meaningful_depth,
        }

"""Unweighted reciprocal rank fusion (Cormack et al. 2009): score(d) = sum over rankings of 1/(k + rank).

The order is deterministic and matches the rcp-ndcg pool builder: contributions are summed
ranking by ranking in the order given (so float sums are reproducible), and pages with equal
fused scores keep the order in which they were first seen (a stable sort), so the order of the
input rankings is part of the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base.data import Query, Run, Subset
from ..base.errors import UsageError
from ..metrics.ranking import trec_ranked as ranked
from ..providers.plan import Plan

DEFAULT_RRF_K = 60


def rrf_fuse(
    rankings: Sequence[Sequence[str]], k: int = DEFAULT_RRF_K, top: int | None = None
) -> list[tuple[str, float]]:
    """Fuse ranked id lists (best first) into [(id, score)], best first, at most `top` long."""
    if k < 0:
        raise UsageError(f"rrf k={k} must be >= 0", "the usual value is 60")
    scores: dict[str, float] = {}
    for ranking in rankings:
        seen: set[str] = set()
        for rank, doc in enumerate(ranking, start=1):
            if doc in seen:  # a page listed twice in one ranking counts once, at its best rank
                continue
            seen.add(doc)
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    fused = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    return fused[:top] if top is not None else fused


class RRFRetriever:
    """RRF over several first stages: `rrf:bm25+minilm`. Each runs to `depth`, then fusion keeps top_k."""

    def __init__(self, retrievers: Sequence[Any], name: str, k: int = DEFAULT_RRF_K, depth: int | None = None):
        if len(retrievers) < 2:
            raise UsageError(f"method '{name}': rrf needs at least two methods", "write rrf:bm25+minilm")
        self.retrievers = list(retrievers)
        self.name = name
        self.k = k
        self.depth = depth

    def plan(self, subset: Subset, queries: list[Query], top_k: int, plan: Plan) -> None:
        depth = self.depth or max(top_k, 100)
        for retriever in self.retrievers:
            planner = getattr(retriever, "plan", None)
            if planner is not None:
                planner(subset, queries, depth, plan)

    def run(self, subset: Subset, queries: list[Query], top_k: int) -> Run:
        depth = self.depth or max(top_k, 100)
        component_runs = [retriever.run(subset, queries, depth) for retriever in self.retrievers]
        fused: Run = {}
        for query in queries:  # fusion is cheap; the component runs carry the progress bars
            rankings = [[doc for doc, _ in ranked(run.get(query.id, {}))] for run in component_runs]
            fused[query.id] = dict(rrf_fuse(rankings, self.k, top=top_k))
        return fused

    def describe(self) -> dict[str, Any]:
        return {
            "method": "rrf",
            "k": self.k,
            "depth": self.depth,
            "components": [retriever.describe() for retriever in self.retrievers],
        }

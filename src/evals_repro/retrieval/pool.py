"""Judged candidate pools (rcp reranking view): a first stage that returns each query's pool,
and the restriction of any run to the pools.

A reranker over `PoolRetriever` sees exactly the published pool, as every rcp-ndcg reranker did.
A first-stage method in the reranking view must score every pool page: run it with top_k at
least the corpus size, then `restrict_to_pools` (a page it did not return is simply absent).
"""

from __future__ import annotations

from typing import Any

from ..base.context import MethodContext
from ..base.data import Query, Run, Subset
from ..base.errors import DataError
from ..base.registry import METHODS


def restrict_to_pools(run: Run, pools: dict[str, list[str]]) -> Run:
    """Keep, for each query with a pool, only the pool's pages; queries without a pool are dropped."""
    return {qid: {doc: docs[doc] for doc in pools[qid] if doc in docs} for qid, docs in run.items() if qid in pools}


class PoolRetriever:
    """First stage of the reranking view: the query's judged pool, in pool order (score = -position)."""

    name = "pool"

    def run(self, subset: Subset, queries: list[Query], top_k: int) -> Run:
        if subset.pools is None:
            raise DataError(
                f"subset {subset.benchmark}/{subset.name} has no candidate pools",
                "use the reranking view of an rcp benchmark (e.g. vidore-v3-rcp)",
            )
        missing = [q.id for q in queries if q.id not in subset.pools]
        if missing:
            raise DataError(
                f"subset {subset.name}: {len(missing)} queries have no pool, first {missing[0]}",
                "check the benchmark's top_ranked data",
            )
        return {q.id: {doc: -float(i) for i, doc in enumerate(subset.pools[q.id][:top_k])} for q in queries}

    def describe(self) -> dict[str, Any]:
        return {"method": "pool", "source": "subset.pools (top_ranked)"}


@METHODS.register(
    "pool",
    description="the judged candidate pool in its published order (reranking views of rcp benchmarks)",
    contents=("markdown", "images"),
)
def build(name: str, ctx: MethodContext) -> PoolRetriever:
    return PoolRetriever()

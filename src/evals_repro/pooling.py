"""What the runner does differently for subsets with float gains or judged candidate pools.

- Float gains (`Subset.gains`): `ndcg_float_at_10` (RCP-nDCG@10) joins the measures, computed
  with the run's tie rule, which the result records so that results of two rules never mix.
- Pools (`Subset.pools`, the rcp reranking view): every query ranks exactly its pool. A reranked
  method reranks the whole pool (the pool replaces its first stage, depth at least the largest
  pool: what every published rcp-ndcg reranker did); a first-stage method retrieves the whole
  corpus and its run is cut to the pool afterwards (`restrict_to_pools`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .data import Subset
from .errors import DataError
from .retrieval.base import Retriever

GAIN_MEASURE = "ndcg_float_at_10"


def measures_for(subset: Subset, measures: list[str]) -> list[str]:
    """The requested measures, plus RCP-nDCG@10 when the subset carries float gains."""
    if subset.gains is None or GAIN_MEASURE in measures:
        return list(measures)
    return [*measures, GAIN_MEASURE]


@dataclass
class PoolPlan:
    retriever: Retriever
    top_k: int  # what the retriever is asked for (at least the pool or the corpus size)
    config: dict[str, Any] | None  # recorded as the result's config["pool"]


def _check_pools(subset: Subset, pools: dict[str, list[str]]) -> int:
    """The largest pool; a pool naming pages absent from the corpus is a data error."""
    known = {page.id for page in subset.pages}
    for qid, pool in pools.items():
        unknown = [doc for doc in pool if doc not in known]
        if unknown:
            raise DataError(
                f"subset {subset.benchmark}/{subset.name}: the pool of query {qid} names {len(unknown)} pages "
                f"absent from the corpus, first {unknown[0]}",
                "pick another revision of the release (pools and corpus must match)",
            )
    return max((len(pool) for pool in pools.values()), default=0)


def pool_plan(subset: Subset, retriever: Retriever, resolved, top_k: int) -> PoolPlan:
    """How to run `retriever` on `subset`: unchanged without pools, else over the pools."""
    if subset.pools is None:
        return PoolPlan(retriever, top_k, None)
    largest = _check_pools(subset, subset.pools)
    if resolved.is_reranked:
        from .rerankers.pipeline import RerankedRetriever
        from .retrieval.pool import PoolRetriever

        assert isinstance(retriever, RerankedRetriever)  # methods.build made it so for a reranked method
        depth = max(resolved.depth, largest)
        pooled = RerankedRetriever(
            PoolRetriever(), retriever.reranker, depth=depth, name=retriever.name, workers=retriever.workers
        )
        return PoolPlan(
            pooled,
            max(top_k, depth),
            {
                "first_stage": "pool",
                "replaced_first_stage": resolved.first_stage,
                "rerank_depth": depth,
                "largest_pool": largest,
                "note": f"the judged pool replaced {resolved.first_stage} as the first stage and was reranked whole "
                f"(depth {depth} >= largest pool {largest}), as the published rerankers were",
            },
        )
    wide = max(top_k, len(subset.pages))
    return PoolPlan(
        retriever,
        wide,
        {
            "first_stage": resolved.first_stage,
            "retrieved_top_k": wide,
            "largest_pool": largest,
            "note": f"retrieved the whole corpus ({wide} pages) and kept each query's pool pages",
        },
    )

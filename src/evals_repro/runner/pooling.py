"""What the runner does differently for subsets with float gains or judged candidate pools.

- Float gains (`Subset.gains`): `ndcg_float_at_10` (RCP-nDCG@10) joins the measures, computed with
  the protocol's tie rule, which the result records so that results of two rules never mix.
- Pools (`Subset.pools`, the rcp reranking view): every query ranks exactly its pool. A reranked
  method reranks the whole pool: the pipeline spec's first stage was already replaced by the pool
  (`PipelineSpec.for_pooled_view`, before anything was built), what every published rcp-ndcg
  reranker did. A first-stage method retrieves the whole corpus and its run is cut to the pool
  afterwards (`restrict_to_pools`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..base.data import Subset
from ..base.errors import DataError
from ..methods.pipeline import POOL, PipelineSpec

GAIN_MEASURE = "ndcg_float_at_10"


# Measures every run of a subset with nugget (subtopic) judgments adds: FreshStack's.
SUBTOPIC_MEASURES = ("alpha_ndcg_at_10", "nugget_coverage_at_20")


def measures_for(subset: Subset, measures: list[str]) -> list[str]:
    """The requested measures, plus RCP-nDCG@10 when the subset carries float gains, the nugget
    measures (alpha-nDCG@10, coverage@20) when it carries subtopic judgments, and the measures its
    benchmark publishes itself (`own_measures` in its declaration: Legal RAG Bench's
    relevant_passage_in_context_at_5)."""
    extra = [GAIN_MEASURE] if subset.gains is not None else []
    if subset.subtopics is not None:
        extra += SUBTOPIC_MEASURES
    extra += [str(m) for m in subset.source.get("own_measures") or []]
    return [*measures, *(m for m in extra if m not in measures)]


@dataclass(frozen=True)
class PoolPlan:
    top_k: int  # what the retriever is asked for (at least the pool or the corpus size)
    config: dict[str, Any] | None  # recorded as the result's config.pool


def largest_pool(subset: Subset) -> int:
    """The largest pool; a pool naming pages absent from the corpus is a data error."""
    assert subset.pools is not None
    known = {page.id for page in subset.pages}
    for qid, pool in subset.pools.items():
        unknown = [doc for doc in pool if doc not in known]
        if unknown:
            raise DataError(
                f"subset {subset.benchmark}/{subset.name}: the pool of query {qid} names {len(unknown)} pages "
                f"absent from the corpus, first {unknown[0]}",
                "pick another revision of the release (pools and corpus must match)",
            )
    return max((len(pool) for pool in subset.pools.values()), default=0)


def pool_plan(subset: Subset, spec: PipelineSpec, top_k: int, requested: str) -> PoolPlan:
    """How deep to run `spec` on `subset`: as asked without pools, else over the whole pools.

    `requested` is the method as the user wrote it, named in the record when the pool replaced it.
    """
    if subset.pools is None:
        if spec.first_stage == (POOL,):
            raise DataError(
                f"subset {subset.benchmark}/{subset.name} has no candidate pools for method {spec.method_name}",
                "use the pool first stage on the reranking view of an rcp benchmark (e.g. vidore-v3-rcp)",
            )
        return PoolPlan(top_k, None)
    largest = largest_pool(subset)
    if spec.first_stage == (POOL,):
        depth = max(top_k, largest)
        return PoolPlan(
            depth,
            {
                "first_stage": POOL,
                "requested": requested,
                "rerank_depth": "whole pool",
                "largest_pool": largest,
                "note": f"each query's judged pool (up to {largest} pages) is the first stage"
                + (" and was reranked whole, as the published rerankers were" if spec.rerank else ""),
            },
        )
    wide = max(top_k, len(subset.pages))
    return PoolPlan(
        wide,
        {
            "first_stage": spec.first_stage_label,
            "retrieved_top_k": wide,
            "largest_pool": largest,
            "note": f"retrieved the whole corpus ({wide} pages) and kept each query's pool pages",
        },
    )

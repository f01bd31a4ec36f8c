"""Per-variant means and p-MRR for subsets whose queries come in instruction pairs (FollowIR).

Queries carry `metadata["variant"]` (`og` or `changed`) and `metadata["pair"]`; the subset's
`changed_docs` names, per pair, the documents whose judgment the changed instruction flipped.
Each variant's block averages the per-query measures over that variant's scored queries (every
measure, MAP over the full returned ranking and nDCG@10 among them); p-MRR compares the two
rankings of each pair (see `p_mrr`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..evaluate import mean
from .p_mrr import p_mrr


def variant_of(metadata: Mapping[str, Any]) -> str | None:
    value = metadata.get("variant")
    return str(value) if value else None


def variant_blocks(
    queries: Iterable[Any],
    per_query: Mapping[str, Mapping[str, float]],
    run: Mapping[str, Mapping[str, float]],
    changed_docs: Mapping[str, list[str]],
    depth: int | None,
    score_precision: str = "float32",
) -> dict[str, Any]:
    """`{"variants": {variant: {"n_queries", "metrics"}}, "p_mrr": value}` over `queries` (Query objects)."""
    by_variant: dict[str, list[str]] = {}
    pairs: set[str] = set()
    for query in queries:
        variant = variant_of(query.metadata)
        if variant is None:
            continue
        pairs.add(str(query.metadata.get("pair")))
        if query.id in per_query:
            by_variant.setdefault(variant, []).append(query.id)
    variants = {
        variant: {"n_queries": len(qids), "metrics": mean(per_query, qids)} for variant, qids in by_variant.items()
    }
    asked = {pair: docs for pair, docs in changed_docs.items() if pair in pairs}
    return {"variants": variants, "p_mrr": p_mrr(run, asked, depth=depth, score_precision=score_precision)}

"""Scoring one subset's run into the blocks of a result record: which queries a setting ranks, the
run cut to the judged pools, and per-query, per-language and per-variant metrics.

Every query the qrels judge is scored (a query without results scores 0 and counts, trec_eval -c; the record
lists such queries as `empty_queries`); monolingual scores the native language, crosslingual every query language, each weighing the same.
"""

from __future__ import annotations

from typing import Any

from ..base.data import Query, Run, Subset
from ..benchmarks.declaration import BenchmarkDeclaration
from ..metrics.protocol import ScoringProtocol, running_mean
from ..records.units import Setting
from ..retrieval.base import Retriever


def languages_for(setting: str, decl: BenchmarkDeclaration, subset: Subset) -> list[str]:
    """Which query languages a setting scores on this subset (only those the subset has)."""
    if setting == Setting.MONOLINGUAL:
        return [subset.native_language]
    present = set(subset.languages)
    ordered = [lang for lang in decl.query_languages if lang in present]
    return ordered + [lang for lang in subset.languages if lang not in ordered]


def retrieve(subset: Subset, retriever: Retriever, queries: list[Query], top_k: int) -> Run:
    """The retriever's run over `queries`, cut to each query's pool where the subset has pools."""
    from ..retrieval.pool import restrict_to_pools

    run = retriever.run(subset, queries, top_k)
    return run if subset.pools is None else restrict_to_pools(run, subset.pools)


def empty_queries(run: Run, queries: list[Query]) -> list[str]:
    """The queries the run holds no page for (allowed: each scores 0 where judged, as in trec_eval -c)."""
    return sorted(q.id for q in queries if not run.get(q.id))


def ranked_queries(subset: Subset, languages: list[str]) -> tuple[list[Query], list[Query]]:
    """(the queries a run ranks, all queries asked): with pools, only queries that have one are ranked."""
    asked = subset.queries_in(languages)
    queries = asked if subset.pools is None else [q for q in asked if q.id in subset.pools]
    return queries, asked


def score_run(
    subset: Subset,
    run: Run,
    queries: list[Query],
    languages: list[str],
    protocol: ScoringProtocol,
    depth: int | None = None,
) -> dict[str, Any]:
    """Score a run: per query (with metadata), per language (macro mean), and the mean of the language means.

    Every query the qrels judge is scored (a query without results scores 0 and counts, trec_eval -c);
    queries the qrels do not mention are listed as skipped.
    """
    from .. import metrics as M
    from ..records.results import LanguageBlock, QueryEntry

    judged = [q for q in queries if q.id in subset.qrels]
    qrels = {q.id: subset.qrels[q.id] for q in judged}
    per_query_metrics = (
        M.evaluate(
            qrels, {q.id: run.get(q.id, {}) for q in judged}, protocol, gains=subset.gains, subtopics=subset.subtopics
        )
        if qrels
        else {}
    )
    per_query: dict[str, QueryEntry] = {}
    by_language: dict[str, list[str]] = {lang: [] for lang in languages}
    for query in judged:
        if query.id not in per_query_metrics:
            continue
        by_language[query.language].append(query.id)
        per_query[query.id] = QueryEntry(
            language=query.language, metadata=query.metadata, metrics=per_query_metrics[query.id]
        )
    language_blocks = {
        lang: LanguageBlock(n_queries=len(qids), metrics=M.mean(per_query_metrics, qids))
        for lang, qids in by_language.items()
        if qids
    }
    names = [name for name in protocol.measures if not M.get_measure(name).text]  # runid, relstring: no number
    aggregate = (
        {name: running_mean(b.metrics[name] for b in language_blocks.values()) for name in names}
        if language_blocks
        else {}
    )
    variants = None
    if subset.changed_docs is not None:  # instruction pairs (FollowIR): per-variant means and p-MRR
        from ..metrics.published.variants import variant_blocks

        # p-MRR: a changed document missing from a ranking takes rank depth + 1 (101 for a top 100).
        extra = variant_blocks(queries, per_query_metrics, run, subset.changed_docs, depth, protocol.score_precision)
        variants = {v: LanguageBlock(**block) for v, block in extra["variants"].items()}
        aggregate["p_mrr"] = extra["p_mrr"]
        language_blocks = {
            lang: LanguageBlock(n_queries=b.n_queries, metrics={**b.metrics, "p_mrr": extra["p_mrr"]})
            for lang, b in language_blocks.items()
        }
    return {
        "metrics": aggregate,
        "languages": language_blocks,
        "per_query": per_query,
        "n_queries": len(per_query),
        "skipped_queries": sorted(q.id for q in queries if q.id not in per_query),
        "empty_queries": empty_queries(run, queries),
        **({"variants": variants} if variants is not None else {}),
    }

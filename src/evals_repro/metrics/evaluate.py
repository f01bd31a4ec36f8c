"""Score a run against qrels, per query, and average per-query scores (macro mean)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import DataError
from .base import EvalData, Measure, PerQuery, get_measure
from .protocol import ScoringProtocol
from .ranking import check_scores


def scored_queries(qrels: Mapping[str, Mapping[str, int]]) -> list[str]:
    """Queries with at least one positive judgment, in trec_eval's order (qid ascending)."""
    return sorted(qid for qid, docs in qrels.items() if any(rel > 0 for rel in docs.values()))


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    measures: Iterable[str | Measure] | ScoringProtocol | None = None,
    *,
    gains: Mapping[str, Mapping[str, float]] | None = None,
    options: Mapping[str, Any] | None = None,
    protocol: ScoringProtocol | None = None,
    subtopics: Mapping[str, Mapping[str, Mapping[str, int]]] | None = None,
) -> PerQuery:
    """`{qid: {measure name: value}}` for every query that has a positive qrel.

    A scored query absent from the run (or with an empty ranking) scores 0 and stays in
    (trec_eval `-c`); run queries without qrels are ignored. Scores are compared as float32
    and ties broken by doc id descending, as trec_eval does.
    """
    if isinstance(measures, ScoringProtocol):
        protocol, measures = measures, None
    if protocol is None:
        protocol = ScoringProtocol.from_options(None, options)
    options = {**dict(options or {}), "tie_rule": protocol.tie_rule}
    resolved: dict[str, Measure] = {}
    for item in protocol.measures if measures is None else measures:
        measure = get_measure(item)
        resolved.setdefault(measure.name, measure)
    qids = scored_queries(qrels)
    if not qids:
        raise DataError(
            "qrels: no query has a relevant document (relevance > 0)", "check the qrels file and its relevance column"
        )
    prepared = {qid: run.get(qid) or {} for qid in qids}
    for qid in qids:
        check_scores(qid, prepared[qid])
    data = EvalData(
        qrels=qrels, run=prepared, qids=qids, gains=gains, options=options, protocol=protocol, subtopics=subtopics
    )
    by_backend: dict[Any, list[Measure]] = {}
    for measure in resolved.values():
        by_backend.setdefault(measure.compute, []).append(measure)
    partial: PerQuery = {qid: {} for qid in qids}
    for compute, group in by_backend.items():
        for qid, values in compute(group, data).items():
            partial[qid].update(values)
    # Keep the requested measure order in every row.
    return {qid: {name: partial[qid][name] for name in resolved} for qid in qids}


def mean(per_query: Mapping[str, Mapping[str, float]], qids: Iterable[str] | None = None) -> dict[str, float]:
    """Macro average over `qids` (default: every query in `per_query`).

    Ids without a row (queries that had no positive qrel, so were not scored) are skipped;
    no rows at all gives `{}`.
    """
    selected = list(per_query) if qids is None else [q for q in dict.fromkeys(qids) if q in per_query]
    if not selected:
        return {}
    names = list(per_query[selected[0]])
    return {name: sum(per_query[qid][name] for qid in selected) / len(selected) for name in names}

"""Score a run against qrels per query, and combine per-query scores into the `all` values.

Every judged query counts: a query listed in the qrels is scored even when none of its
documents is relevant (it scores 0 and stays in the mean and in num_q, as trec_eval does), and
under the default `complete` protocol even when the run has no result for it (trec_eval -c).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from itertools import chain
from typing import Any

from ..base.errors import DataError, EvalsError
from .protocol import EvalData, Measure, PerQuery, ScoringProtocol, expand_measure, running_sum
from .ranking import check_scores
from .trec.complete import clean

MIN_GEO_MEAN = 0.00001  # trec_eval's floor for gm_map / gm_bpref


def judged_queries(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]] | None = None,
    complete: bool = True,
) -> list[str]:
    """Queries with at least one judgment, in trec_eval's order (qid ascending); with
    `complete=False`, only those the run has results for (trec_eval 9 without -c)."""
    if complete or run is None:
        return sorted(qid for qid, docs in qrels.items() if docs)
    return sorted(qid for qid, docs in qrels.items() if docs and run.get(qid))


def scored_queries(qrels: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The judged queries (kept for callers of the older name)."""
    return judged_queries(qrels)


def _protocol(measures: Any, options: Mapping[str, Any] | None, protocol: ScoringProtocol | None):
    """(protocol, explicit measures or None) for the three ways `evaluate` can be called."""
    if isinstance(measures, ScoringProtocol):
        return measures, None
    if protocol is None:
        protocol = ScoringProtocol.from_options(None, options)
    return protocol, measures


def _grades(qid: str, docs: Mapping[str, int]) -> dict[str, int]:
    """One query's judgments as a plain dict of integer grades (what pytrec_eval accepts)."""
    grades = {}
    for doc, grade in docs.items():
        if isinstance(grade, bool) or not float(grade).is_integer():
            raise DataError(
                f"qrels: query {qid} document {doc} has grade {grade!r}; grades are integers",
                "pass float gains as gains= (ndcg_float_at_k), not as qrels",
            )
        grades[doc] = int(grade)
    return grades


def prepare(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    protocol: ScoringProtocol,
    *,
    gains: Mapping[str, Mapping[str, float]] | None = None,
    options: Mapping[str, Any] | None = None,
    subtopics: Mapping[str, Mapping[str, Mapping[str, int]]] | None = None,
) -> EvalData:
    """The judged queries with their rankings (NaN scores refused), ready for the families."""
    qids = judged_queries(qrels, run, protocol.complete)
    if not qids:
        if not judged_queries(qrels):
            raise DataError("qrels: no query has a judgment", "check the qrels file (`qid 0 docid relevance`)")
        raise DataError(
            "no judged query has results in the run", "check that the run and the qrels use the same query ids"
        )
    # pytrec_eval reads plain dicts of float scores and int grades. The checks run at C speed over
    # the whole run and fall back to the per-query work only when something needs fixing or naming.
    given = {qid: run.get(qid) or {} for qid in qids}
    if protocol.ignore_identical_ids:  # BEIR's / mteb's evaluator: the query's own id is not a result
        given = {
            qid: {doc: s for doc, s in scores.items() if doc != qid} if qid in scores else scores
            for qid, scores in given.items()
        }
    prepared: dict[str, dict[str, float]] = (
        given  # type: ignore[assignment]
        if set(map(type, given.values())) <= {dict}
        else {qid: dict(scores) for qid, scores in given.items()}
    )
    if not math.isfinite(sum(map(sum, map(dict.values, prepared.values())))):
        for qid, scores in prepared.items():
            check_scores(qid, scores)  # NaN is refused; +-inf are valid scores
    selected = qrels if len(qrels) == len(qids) else {qid: qrels[qid] for qid in qids}
    judged: dict[str, dict[str, int]] = (
        selected
        if type(selected) is dict
        and set(map(type, selected.values())) <= {dict}
        and set(map(type, chain.from_iterable(map(dict.values, selected.values())))) <= {int}
        else {qid: _grades(qid, docs) for qid, docs in selected.items()}
    )
    return EvalData(
        qrels=judged,
        run=prepared,
        qids=qids,
        gains=gains,
        options={**dict(options or {}), "tie_rule": protocol.tie_rule},
        protocol=protocol,
        subtopics=subtopics,
    )


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
    """`{qid: {measure name: value}}` for every judged query (see `judged_queries`).

    Call as `evaluate(qrels, run, protocol)`, `evaluate(qrels, run, protocol=...)`, or with a
    list of measure names (the protocol then defaults, or comes from `options`, e.g.
    `{"tie_rule": "doc-id"}`). Run queries without qrels are ignored. Ranking follows the
    protocol: float32 scores and doc id descending by default (trec_eval 9 / pytrec_eval).
    Text measures (runid, relstring) are left out: `trec_eval_lines` prints them.
    """
    protocol, explicit = _protocol(measures, options, protocol)
    resolved: dict[str, Measure] = {}
    for item in protocol.measures if explicit is None else explicit:
        for measure in expand_measure(item):
            if not measure.text:
                resolved.setdefault(measure.name, measure)
    data = prepare(qrels, run, protocol, gains=gains, options=options, subtopics=subtopics)
    qids = data.qids
    by_backend: dict[Any, list[Measure]] = {}
    for measure in resolved.values():
        by_backend.setdefault(measure.compute, []).append(measure)
    names = list(resolved)
    partial: PerQuery | None = None
    for compute, group in by_backend.items():
        values = compute(group, data)
        if partial is None:
            partial = values
        else:
            for qid, row in values.items():
                partial[qid].update(row)
    if partial is None:
        return {qid: {} for qid in qids}
    clean(partial, resolved.values(), data)
    if list(partial[qids[0]]) == names:
        return partial
    # Keep the requested measure order in every row.
    return {qid: {name: partial[qid][name] for name in names} for qid in qids}


def _aggregation(name: str) -> str:
    try:
        found = expand_measure(name)
    except EvalsError:
        return "mean"
    return found[0].aggregate if len(found) == 1 else "mean"


def aggregate(name: str, values: list[float]) -> float:
    """The `all` value of one measure over per-query values (mean, sum or geometric mean)."""
    how = _aggregation(name)
    if how == "sum":
        return running_sum(values)
    if how == "gmean":
        return math.exp(running_sum(math.log(max(v, MIN_GEO_MEAN)) for v in values) / len(values))
    return running_sum(values) / len(values)


def mean(per_query: Mapping[str, Mapping[str, float]], qids: Iterable[str] | None = None) -> dict[str, float]:
    """The `all` value of every measure over `qids` (default: every query in `per_query`).

    A macro mean for most measures; counts (num_q, num_ret, ...) are summed and gm_map /
    gm_bpref are geometric means, as trec_eval prints them. Ids without a row are skipped; no
    rows at all gives `{}`. Values are added in trec_eval's query order (ids sorted as strings, whatever
    order they come in), since a running double sum depends on the order.
    """
    selected = sorted(per_query) if qids is None else sorted(q for q in set(qids) if q in per_query)
    if not selected:
        return {}
    names = list(per_query[selected[0]])
    return {name: aggregate(name, [per_query[qid][name] for qid in selected]) for name in names}

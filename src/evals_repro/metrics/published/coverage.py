"""Nugget coverage (`nugget_coverage_at_{k}`): the share of a query's nuggets (subtopics) that at
least one of its top k documents supports, as FreshStack defines Coverage@k.

Subtopic qrels are `{qid: {nugget: {doc: judgment}}}`; a document supports a nugget when its
judgment is > 0 (FreshStack judges 1 relevant, 0 not). Rankings follow the harness's trec_eval
order (score descending as float32 by default, ties by doc id descending); FreshStack itself
keeps tied documents in insertion order. A query missing from the run covers nothing and scores
0; every judged query counts in the mean. FreshStack rounds each query's value to 5 decimals
before averaging; this module does not round.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ...base.errors import UsageError
from ..protocol import EvalData, Family, Measure, PerQuery, register
from ..ranking import check_scores, ranked_docs

SubtopicQrels = Mapping[str, Mapping[str, Mapping[str, int]]]


def nugget_coverage_at_k(
    subtopic_qrels: SubtopicQrels,
    run: Mapping[str, Mapping[str, float]],
    k: int = 20,
    *,
    score_precision: str = "float32",
    qids: Iterable[str] | None = None,
) -> dict[str, float]:
    """qid -> fraction of the query's nuggets supported within its top k (queries without nuggets score 0)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UsageError(f"coverage cutoff k={k!r} must be an integer >= 1", "use k=20")
    selected = sorted(subtopic_qrels) if qids is None else list(dict.fromkeys(qids))
    values = {}
    for qid in selected:
        nuggets = subtopic_qrels.get(qid) or {}
        scores = run.get(qid) or {}
        check_scores(qid, scores)
        top = set(ranked_docs(scores, score_precision, k))
        covered = sum(1 for docs in nuggets.values() if any(docs.get(doc, 0) > 0 for doc in top))
        values[qid] = covered / len(nuggets) if nuggets else 0.0
    return values


def _compute(measures: list[Measure], data: EvalData) -> PerQuery:
    if data.subtopics is None:
        raise UsageError(f"{measures[0].name} needs subtopic (nugget) qrels", "pass subtopics= to evaluate()")
    out: PerQuery = {qid: {} for qid in data.qids}
    for measure in measures:
        assert measure.cutoff is not None
        values = nugget_coverage_at_k(
            data.subtopics, data.run, measure.cutoff, score_precision=data.protocol.score_precision, qids=data.qids
        )
        for qid in data.qids:
            out[qid][measure.name] = values[qid]
    return out


_FORM = re.compile(r"nugget_coverage_at_([1-9][0-9]*)")


def _parse(text: str) -> Measure | None:
    match = _FORM.fullmatch(text)
    if match is None:
        return None
    k = int(match.group(1))
    return Measure(text, f"coverage_{k}", _compute, cutoff=k)


FAMILY = register(Family("nugget_coverage", ("nugget_coverage_at_{k}",), _parse))

"""The pytrec_eval backend shared by every trec_eval family (nDCG, AP, recall, P, RR).

All requested trec_eval measures are computed in one evaluator pass per ranking depth (the
full ranking, plus one truncated view per RR cutoff, since `recip_rank` ignores cutoffs).
pytrec_eval is imported here, lazily: it pulls in NumPy and would slow CLI start-up.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .base import EvalData, Family, Measure, PerQuery
from .ranking import truncate


@dataclass(frozen=True)
class TrecMeasure(Measure):
    """A measure pytrec_eval computes: `spec` is its measure request (`ndcg_cut.10`), `key` the
    per-query result key (`ndcg_cut_10`), `depth` the ranking cut applied before evaluation."""

    spec: str = ""
    key: str = ""
    depth: int | None = None


def compute(measures: list[Measure], data: EvalData) -> PerQuery:
    import pytrec_eval

    qrels = {qid: dict(data.qrels[qid]) for qid in data.qids}
    results: PerQuery = {qid: {} for qid in data.qids}
    by_depth: dict[int | None, list[TrecMeasure]] = {}
    for measure in measures:
        assert isinstance(measure, TrecMeasure)
        by_depth.setdefault(measure.depth, []).append(measure)
    for depth, group in by_depth.items():
        precision = data.protocol.score_precision
        run = data.run if depth is None else {qid: truncate(data.run[qid], depth, precision) for qid in data.qids}
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {m.spec for m in group})
        scored = evaluator.evaluate({qid: run[qid] for qid in data.qids})
        names = [(measure.name, measure.key) for measure in group]
        for qid in data.qids:
            values, row = scored[qid], results[qid]
            for name, key in names:
                row[name] = values[key]
    return results


def cutoff_family(
    name: str,
    prefix: str,
    spec: Callable[[int], str],
    key: Callable[[int], str],
    trec_name: Callable[[int], str] | None = None,
    uncut: tuple[str, str] | None = None,
    cut_depth: bool = False,
) -> Family:
    """A family `<prefix>_at_{k}` (and `<prefix>` uncut when `uncut=(spec, key)` is given).

    `trec_name` defaults to the result key; `cut_depth` truncates rankings to k first.
    """
    pattern = re.compile(rf"{re.escape(prefix)}_at_([1-9][0-9]*)")
    trec_name = trec_name or key

    def parse(text: str) -> Measure | None:
        if uncut is not None and text == prefix:
            return TrecMeasure(prefix, uncut[1], compute, spec=uncut[0], key=uncut[1])
        match = pattern.fullmatch(text)
        if match is None:
            return None
        k = int(match.group(1))
        return TrecMeasure(
            f"{prefix}_at_{k}",
            trec_name(k),
            compute,
            cutoff=k,
            spec=spec(k),
            key=key(k),
            depth=k if cut_depth else None,
        )

    forms = (f"{prefix}_at_{{k}}",) + ((prefix,) if uncut is not None else ())
    return Family(name, forms, parse)

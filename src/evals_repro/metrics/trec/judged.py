"""How much of a ranking is judged: `judged_at_{k}` (ours) and trec_eval 10's `unj_{k}`.

- `judged_at_k`: judged documents in the top k / min(k, documents retrieved), as ir_measures'
  Judged@k (0 for a query without results). "Judged" means listed in the qrels with a grade
  >= 0 (trec_eval reads negative grades as in the pool but unjudged).
- `unj_k` (trec_eval `unj.k`): unjudged documents in the top k / k (missing ranks count as judged
  non-relevant); 0 for a query without results (trec_eval 10's -c, complete.py).
Both follow the protocol's ranking (-M, -J included).
"""

from __future__ import annotations

import re

from ..protocol import EvalData, Family, Measure, PerQuery, register
from .rels import ranked
from .table import TrecMeasure


def compute_unj(measures: list[Measure], data: EvalData) -> PerQuery:
    results: PerQuery = {}
    for qid in data.qids:
        rels = ranked(data, qid).rels
        row = {}
        for m in measures:
            assert isinstance(m, TrecMeasure) and m.cutoff is not None
            row[m.name] = sum(1 for r in rels[: m.cutoff] if r < 0) / m.cutoff  # 0 when absent: complete.clean
        results[qid] = row
    return results


def compute_judged(measures: list[Measure], data: EvalData) -> PerQuery:
    results: PerQuery = {}
    for qid in data.qids:
        rels = ranked(data, qid).rels
        row = {}
        for m in measures:
            assert m.cutoff is not None
            top = rels[: m.cutoff]
            row[m.name] = sum(1 for r in top if r >= 0) / len(top) if top else 0.0
        results[qid] = row
    return results


_FORM = re.compile(r"judged_at_([1-9][0-9]*)")


def _parse(text: str) -> Measure | None:
    match = _FORM.fullmatch(text)
    if match is None:
        return None
    k = int(match.group(1))
    return Measure(f"judged_at_{k}", f"judged_{k}", compute_judged, cutoff=k, higher_is_better=False)


FAMILY = register(Family("judged", ("judged_at_{k}",), _parse))

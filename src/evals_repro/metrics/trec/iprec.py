"""Interpolated precision at recall points (`iprec_at_recall_0.10`) and their mean (`11pt_avg`).

Interpolated precision at recall r is the highest precision at any rank at or below the rank
where recall reaches r. A recall point becomes a number of relevant documents, and here the two
references differ: trec_eval 9.x (and pytrec_eval) take (long)(r * num_rel + 0.9), trec_eval
10.x rounds to nearest (lround). The protocol's score precision picks the reference: float32 ->
trec_eval 9, float64 -> trec_eval 10. An empty ranking (-J dropped every document) gives NaN at
every point reached, as both trec_eval versions do (0/0, printed `-nan`).
"""

from __future__ import annotations

import math

from ..protocol import EvalData, Measure, PerQuery
from .rels import ranked
from .table import RECALL_POINTS, TrecMeasure


def _relevant_count(point: float, num_rel: int, v10: bool) -> int:
    value = point * num_rel
    if v10:
        return int(math.floor(value + 0.5)) if value >= 0 else -int(math.floor(-value + 0.5))
    return int(value + 0.9)


def interpolated(rels: list[int], num_rel: int, points: list[float], level: int, v10: bool) -> list[float]:
    """Interpolated precision at each recall point (points ascending), as trec_eval computes it."""
    num_ret = len(rels)
    num_rel_ret = sum(1 for r in rels if r >= level)
    cutoffs = [_relevant_count(p, num_rel, v10) for p in points]
    values = [0.0] * len(points)
    current = len(points) - 1
    while current >= 0 and cutoffs[current] > num_rel_ret:
        current -= 1
    best = num_rel_ret / num_ret if num_ret else math.nan  # 0/0, as trec_eval (printed -nan)
    rel_so_far = num_rel_ret
    i = num_ret
    while i > 0 and rel_so_far > 0:
        precision = rel_so_far / i
        if best < precision:
            best = precision
        if rels[i - 1] >= level:
            while current >= 0 and rel_so_far == cutoffs[current]:
                values[current] = best
                current -= 1
            rel_so_far -= 1
        i -= 1
    while current >= 0:
        values[current] = best
        current -= 1
    return values


def compute(measures: list[Measure], data: EvalData) -> PerQuery:
    protocol = data.protocol
    v10 = protocol.score_precision == "float64"
    level = protocol.relevance_level
    points = sorted(
        {float(m.param or 0) for m in measures if isinstance(m, TrecMeasure) and m.base == "iprec_at_recall"}
    )
    averages = {
        m.name: sorted(float(p) for p in (m.param.split(",") if m.param else RECALL_POINTS))
        for m in measures
        if isinstance(m, TrecMeasure) and m.base == "11pt_avg"
    }
    results: PerQuery = {}
    for qid in data.qids:
        r = ranked(data, qid)
        row: dict[str, float] = {}
        if points:
            by_point = dict(zip(points, interpolated(r.rels, r.num_rel, points, level, v10)))
            for m in measures:
                if isinstance(m, TrecMeasure) and m.base == "iprec_at_recall":
                    row[m.name] = by_point[float(m.param or 0)]
        for name, avg_points in averages.items():
            total = 0.0
            for value in reversed(interpolated(r.rels, r.num_rel, avg_points, level, v10)):
                total += value  # trec_eval's order (highest point first), so the sum is bit-identical
            row[name] = total / len(avg_points)
        results[qid] = row
    return results

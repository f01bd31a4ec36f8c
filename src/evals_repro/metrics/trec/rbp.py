"""Rank-biased precision (`rbp`, trec_eval 10) and its residual (`rbp_resid`), persistence p = 0.9.

rbp = (1 - p) * sum over ranks i (from 0) of gain(i) * p^i. Gains are the relevance grades (or
the `grade=gain` pairs given, e.g. `rbp.p=0.95,2=1`), rescaled to [0, 1] by (g - min) / (max - min)
when some lie outside it; unjudged documents gain 0. rbp_resid is the most rbp could still rise
if every unjudged retrieved document had gain 1 and the ranking continued with gain-1 documents:
p^n + (1 - p) * sum over unjudged ranks of p^i, and 0 when no retrieved document is unjudged.
A judged query without results is trec_eval 10's -c stand-in (complete.py): rbp 0, rbp_resid 0, but
rbp_resid with parameters 1 (trec_eval zeroes only the name `rbp_resid`).
"""

from __future__ import annotations

from ..protocol import EvalData, Measure, PerQuery
from .rels import ranked
from .table import TrecMeasure

DEFAULT_P = 0.9


def _params(param: str | None) -> tuple[float, dict[int, float]]:
    """(p, explicit gains) from `p=0.95,1=0.5`-style pairs; names that are not integers other than p are ignored."""
    p, gains = DEFAULT_P, {}
    for pair in (param or "").split(","):
        if "=" not in pair:
            continue
        name, value = pair.split("=", 1)
        if name == "p":
            p = float(value)
        elif name.lstrip("+-").isdigit():
            gains[int(name)] = float(value)
    return p, gains


def rbp(rels: list[int], levels: dict[int, int], param: str | None = None) -> float:
    p, explicit = _params(param)
    gains = {level: float(level) for level in range(max(levels, default=-1) + 1)}
    gains.update(explicit)
    low, high = min(gains.values(), default=0.0), max(gains.values(), default=0.0)
    if low < 0 or high > 1:
        gains = {level: (g - low) / (high - low) for level, g in gains.items()}
    total, weight = 0.0, 1.0
    for rel in rels:
        gain = gains.get(rel, 0.0)
        if gain != 0:
            total += gain * weight
        weight *= p
    return (1.0 - p) * total


def rbp_resid(rels: list[int], param: str | None = None) -> float:
    p, _ = _params(param)
    total, weight, unjudged = 0.0, 1.0, 0
    for rel in rels:
        if rel < 0:
            unjudged += 1
            total += weight
        weight *= p
    return weight + (1 - p) * total if unjudged else 0.0


def compute(measures: list[Measure], data: EvalData) -> PerQuery:
    results: PerQuery = {}
    for qid in data.qids:
        r = ranked(data, qid)
        row: dict[str, float] = {}
        for m in measures:
            assert isinstance(m, TrecMeasure)
            if m.base == "rbp":
                row[m.name] = rbp(r.rels, r.levels, m.param)
            else:
                row[m.name] = rbp_resid(r.rels, m.param)
        results[qid] = row
    return results

"""trec_eval 10's `dcg`, `ideal_dcg` (the two halves of its `ndcg`) and `yaap`; none is in all_trec.

Gains, as trec_eval's ndcg reads them: a relevance level's gain is the level itself unless a
`level=gain` pair overrides it (`dcg.1=3,2=9`; levels may be 0 or negative, gains 0 or
negative; names that are not integers are ignored). Unjudged documents gain 0 unless a pair
names their code (-1 not in the qrels, -2 judged with a negative grade).
- `dcg`: sum over every retrieved rank i (from 1) of gain / log2(i + 1).
- `ideal_dcg`: the same sum over the ideal ranking: the judged documents level by level, from
  the highest gain down, stopping at the first level with documents whose gain is not positive
  (levels without documents are skipped, except that a top level of gain <= 0 gives 0). The levels are
  ordered by trec_eval's comparison, which truncates the gain difference to an integer: gains
  less than 1 apart compare equal, so with fractional gains the order (and ideal_dcg) follows
  the sorting algorithm over the pairs as given, then the remaining levels ascending. It depends on the qrels only (a query without results keeps it).
- `yaap` (Robertson, ECIR 2012): log((1 + s) / (1 + R - s)), s = sum over the relevant retrieved
  documents of (relevant ones up to it) / rank, R the relevant count (-l applies to both).
Rankings follow the protocol (precision, -M, -J) through rels.ranked.
"""

from __future__ import annotations

import math

from ..protocol import EvalData, Measure, PerQuery
from .rels import Ranked, ranked
from .table import TrecMeasure


def _pairs(param: str | None) -> list[tuple[int, float]]:
    """The `level=gain` pairs with an integer level, in the order given."""
    found = []
    for part in (param or "").split(","):
        name, eq, value = part.partition("=")
        digits = name[1:] if name[:1] in "+-" else name
        if eq and digits.isdigit():
            found.append((int(name), float(value)))
    return found


def gain_levels(levels: dict[int, int], param: str | None) -> list[tuple[int, float, int]]:
    """(level, gain, judged documents at it), in trec_eval's ascending order of gain."""
    table: list[list] = [[level, gain, 0] for level, gain in _pairs(param)]
    for level in range(max(levels, default=-1) + 1):
        entry = next((e for e in table if e[0] == level), None)
        if entry is None:
            table.append([level, float(level), levels.get(level, 0)])
        else:
            entry[2] = levels.get(level, 0)
    return [(level, gain, count) for level, gain, count in _merge_sorted(table)]


def _merge_sorted(items: list[list]) -> list[list]:
    """Top-down merge sort (halves n // 2 and the rest, ties to the left) on trec_eval's gain
    comparison, int(a - b): not a total order, so the algorithm decides the result. This is the
    one glibc's qsort uses (merge sort in 2.36 and from 2.39), which trec_eval and pytrec_eval call."""
    if len(items) <= 1:
        return list(items)
    half = len(items) // 2
    left, right = _merge_sorted(items[:half]), _merge_sorted(items[half:])
    merged: list[list] = []
    i = j = 0
    while i < len(left) and j < len(right):
        if int(left[i][1] - right[j][1]) <= 0:
            merged.append(left[i])
            i += 1
        else:
            merged.append(right[j])
            j += 1
    return merged + left[i:] + right[j:]


def _gain_of(table: list[tuple[int, float, int]]) -> dict[int, float]:
    gains: dict[int, float] = {}
    for level, gain, _ in table:
        gains.setdefault(level, gain)  # the first entry for a level wins, as trec_eval looks it up
    return gains


def dcg(r: Ranked, param: str | None = None) -> float:
    gain_of = _gain_of(gain_levels(r.levels, param))
    total = 0.0
    for i, rel in enumerate(r.rels):
        gain = gain_of.get(rel, 0.0)
        if gain != 0:
            total += gain / math.log2(i + 2)
    return total


def ideal_dcg(r: Ranked, param: str | None = None) -> float:
    table = gain_levels(r.levels, param)
    if not table or table[-1][1] <= 0:
        return 0.0  # trec_eval checks the top entry's gain before skipping empty levels
    total, rank = 0.0, 0
    for _, gain, count in reversed(table):
        if count == 0:
            continue
        if gain <= 0:
            break
        for _ in range(count):
            total += gain / math.log2(rank + 2)
            rank += 1
    return total


def yaap(r: Ranked, level: int) -> float:
    found, total = 0, 0.0
    for i, rel in enumerate(r.rels):
        if rel >= level:
            found += 1
            total += found / (i + 1)
    return math.log((1.0 + total) / (1.0 + r.num_rel - total))


def compute(measures: list[Measure], data: EvalData) -> PerQuery:
    level = data.protocol.relevance_level
    results: PerQuery = {}
    for qid in data.qids:
        r = ranked(data, qid)
        row: dict[str, float] = {}
        for m in measures:
            assert isinstance(m, TrecMeasure)
            if m.base == "dcg":
                row[m.name] = dcg(r, m.param)
            elif m.base == "ideal_dcg":
                row[m.name] = ideal_dcg(r, m.param)
            else:
                row[m.name] = yaap(r, level)
        results[qid] = row
    return results

"""The study's paired comparisons: every reranker against the first stage and against each other.

On each dataset's headline measure (the quality table's), per dataset, per group and overall (each
group weighs the same, each dataset the same within its group, as the quality table): the difference,
the p-value of a paired two-sided randomization test (a query's sign flipped, within each dataset)
Holm-Bonferroni adjusted over every comparison of the study, and the difference's interval by inverting
that test at the level Holm tested the comparison at, so it excludes 0 exactly when the comparison is
marked. A dataset, group or overall cell is compared only where both sides have a score (every query
scored, every dataset complete).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

from ..reporting.significance import (
    ALPHA,
    BETTER,
    DEFAULT_PERMUTATIONS,
    DEFAULT_SEED,
    WORSE,
    HolmTested,
    PairedStats,
    Stratum,
    check_family,
    difference_cells,
    format_p,
    holm,
    holm_factors,
)
from .quality_table import BASELINE, group_scores, overall_scores

OVERALL = "overall"


@dataclass(frozen=True)
class StudyComparison(HolmTested):
    model: str
    vs: str
    scope: str  # "overall", a group, or "bench/subset"
    kind: str  # overall | group | dataset
    measure: str
    diff: float
    low: float | None
    high: float | None
    p: float
    p_ttest: float | None
    queries: int
    p_adjusted: float | None = None
    factor: int = 1  # the interval's level is 1 - ALPHA / factor (Holm's step for this comparison)


@dataclass
class StudyComparisons:
    rows: list[StudyComparison]
    permutations: int
    resamples: int
    seed: int  # of the bootstrap and randomization draws

    def marks(self) -> dict[tuple[str, str], str]:
        """(model, group or "overall") -> marker against the first stage, for the overall quality table."""
        signs = {"better": BETTER, "worse": WORSE}
        return {
            (r.model, r.scope): signs[r.verdict]
            for r in self.rows
            if r.vs == BASELINE and r.kind != "dataset" and r.verdict
        }

    def against_first_stage(self) -> dict[tuple[str, str], StudyComparison]:
        """(model, "bench/subset") -> the dataset comparison with the first stage (quality.csv's columns)."""
        return {(r.model, r.scope): r for r in self.rows if r.vs == BASELINE and r.kind == "dataset"}


class StudyData:
    """The headline measure's per-query scores, one stratum per dataset, and the cells the study averages."""

    def __init__(
        self,
        quality: dict[str, Any],
        resamples: int = 2000,
        permutations: int = DEFAULT_PERMUTATIONS,
        seed: int = DEFAULT_SEED,
    ):
        self.quality = quality
        self.names = [BASELINE, *quality["models"]]
        strata: list[Stratum] = []
        self.where: dict[str, int] = {}  # "bench/subset" -> stratum
        self.measure_of: dict[str, str] = {}
        self.members: dict[str, list[str]] = {g: [] for g in quality["groups"]}
        self.benches: dict[str, list[str]] = {}
        for bench, subsets in quality["benchmarks"].items():
            for subset, row in subsets.items():
                key = f"{bench}/{subset}"
                self.members.setdefault(row["group"], []).append(key)
                self.benches.setdefault(bench, []).append(key)
                per_query = row.get("per_query", {})
                present = [n for n in self.names if per_query.get(n)]
                if not present:
                    continue
                order = sorted(per_query[present[0]])
                columns = [
                    [per_query[n][q] for q in order] if n in present and set(per_query[n]) == set(order) else None
                    for n in self.names
                ]
                self.where[key] = len(strata)
                self.measure_of[key] = row["measure"]
                strata.append(Stratum.from_columns(key, columns))
        self.stats = PairedStats(strata, permutations, resamples, seed)

    def usable(self, weights: dict[int, float], *names: str) -> bool:
        return bool(weights) and all(self.stats.strata[s].present[self.names.index(n)] for s in weights for n in names)

    def weights(self, keys: list[str]) -> dict[int, float] | None:
        """Equal weights over these datasets; None when one has no scores."""
        if not keys or any(k not in self.where for k in keys):
            return None
        return {self.where[k]: 1 / len(keys) for k in keys}

    def overall_weights(self) -> dict[int, float] | None:
        groups = self.quality["groups"]
        if not groups or any(self.weights(self.members.get(g, [])) is None for g in groups):
            return None
        return {self.where[k]: 1 / (len(groups) * len(self.members[g])) for g in groups for k in self.members[g]}

    def interval(self, weights: dict[int, float] | None, name: str) -> tuple[float, float | None, float | None] | None:
        """A model's (or the first stage's) score on a cell with its cluster bootstrap interval."""
        if weights is None or not self.usable(weights, name):
            return None
        found = self.stats.interval(weights, self.names.index(name))
        return found.estimate, found.low, found.high


def compare_study(
    quality: dict[str, Any],
    resamples: int = 2000,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
    data: StudyData | None = None,
) -> StudyComparisons:
    data = data or StudyData(quality, resamples, permutations, seed)
    groups = group_scores(quality)
    overall = overall_scores(quality, groups)
    cells: list[tuple[str, str, str, dict[int, float]]] = []  # kind, scope, measure, weights
    every = data.overall_weights()
    if every is not None:
        cells.append(("overall", OVERALL, _measures(data.members, data.measure_of, quality["groups"]), every))
    for g in quality["groups"]:
        weights = data.weights(data.members.get(g, []))
        if weights is not None:
            cells.append(("group", g, _measures(data.members, data.measure_of, [g]), weights))
    for key in sorted(data.where):
        cells.append(("dataset", key, data.measure_of[key], {data.where[key]: 1.0}))
    pairs = [(m, BASELINE) for m in quality["models"]] + [(b, a) for a, b in combinations(quality["models"], 2)]
    family: list[tuple[str, str, str, str, str, dict[int, float]]] = []
    for kind, scope, measure, weights in cells:
        for a, b in pairs:
            if not data.usable(weights, a, b):
                continue
            if kind == "overall" and (overall[a] is None or overall[b] is None):
                continue
            if kind == "group" and (groups[scope][a] is None or groups[scope][b] is None):
                continue
            family.append((a, b, scope, kind, measure, weights))
    check_family(data.stats.permutations, len(family), "the study")  # before any draw
    rows = []
    for a, b, scope, kind, measure, weights in family:
        found = data.stats.compare(weights, data.names.index(a), data.names.index(b))
        rows.append(
            StudyComparison(
                a, b, scope, kind, measure, found.diff, None, None, found.p_randomization, found.p_ttest, found.queries
            )
        )
    adjusted = holm([r.p for r in rows])
    factors = holm_factors([r.p for r in rows])
    done = []
    for r, p, factor, (a, b, *_, weights) in zip(rows, adjusted, factors, family):
        low, high = data.stats.shift_interval(weights, data.names.index(a), data.names.index(b), factor)
        done.append(replace(r, p_adjusted=p, low=low, high=high, factor=factor))
    return StudyComparisons(done, data.stats.permutations, data.stats.resamples, data.stats.seed)


def _measures(members: dict[str, list[str]], measure_of: dict[str, str], groups: list[str]) -> str:
    return ", ".join(sorted({measure_of[k] for g in groups for k in members[g]}))


def legend(comparisons: StudyComparisons) -> str:
    return (
        f"{BETTER} / {WORSE}: better / worse than the first stage at p < {ALPHA} (paired two-sided randomization "
        f"test, {comparisons.permutations:,} permutations; Holm-Bonferroni adjusted over all "
        f"{len(comparisons.rows)} comparisons of the study)."
    )


def comparisons_markdown(comparisons: StudyComparisons) -> list[str]:
    lines = [
        "## Paired comparisons (headline measure, x100)",
        "",
        f"Difference [interval], randomization-test p ({comparisons.permutations:,} permutations, a query's sign "
        f"flipped within its dataset) raw and Holm-adjusted over the study's {len(comparisons.rows)} comparisons, "
        "and the paired t-test p. Interval: the differences the same randomization test does not reject at the "
        "level Holm's step-down tested the comparison at (its confidence in `level`), so it excludes 0 exactly "
        "when the difference is marked.",
        "",
        "| model | vs | scope | measure | diff | interval | level | p | p adj. | p (t-test) | queries |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in comparisons.rows:
        diff, interval = difference_cells(r.diff, r.low, r.high, r.verdict)
        lines.append(
            f"| {r.model} | {r.vs} | {r.scope} | {r.measure} | {diff} | {interval} | {r.level if interval else ''} | "
            f"{format_p(r.p)} | {format_p(r.p_adjusted)} | {format_p(r.p_ttest)} | {r.queries} |"
        )
    if not comparisons.rows:
        lines.append("| (no comparisons: no model has a complete dataset yet) |" + " |" * 10)
    return lines


COLUMNS = (
    "scope", "kind", "measure", "model", "vs", "diff", "low", "high", "level", "p", "p_adjusted", "p_ttest", "queries"
)  # fmt: skip


def comparisons_csv(comparisons: StudyComparisons) -> str:
    """One row per comparison (differences x100, p-values to 6 significant digits)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    for r in comparisons.rows:
        writer.writerow(
            [
                r.scope, r.kind, r.measure, r.model, r.vs, f"{r.diff * 100:.3f}",
                "" if r.low is None else f"{r.low * 100:.3f}", "" if r.high is None else f"{r.high * 100:.3f}",
                "" if r.low is None else r.level, f"{r.p:.6g}", "" if r.p_adjusted is None else f"{r.p_adjusted:.6g}",
                "" if r.p_ttest is None else f"{r.p_ttest:.6g}", r.queries,
            ]
        )  # fmt: skip
    return buffer.getvalue()

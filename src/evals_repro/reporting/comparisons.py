"""`report --baseline / --compare`: paired comparisons of the methods in each report table.

For every cell of a table (a subset, a view's domain, the average), each method is compared with
the baseline (or every pair of methods, `--compare`) on the per-query scores of its result files:
the difference of the cell's scores, the p-values of a paired two-sided randomization test and of a
paired t-test, both Holm-Bonferroni adjusted over every comparison of the table, and the difference's
interval at the level Holm tested it at, by inverting the same randomization test: it excludes 0
exactly when the cell is marked (`significance.py` computes them). A cell's strata follow how the table
averages: a monolingual subset score is the mean over its native-language queries, a crosslingual
one the mean of its per-language means (one stratum per language), the average the mean of its
subset scores. Methods compared on a stratum must have scored exactly the same queries.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, replace
from itertools import combinations

from ..base.errors import DataError, UsageError, choices
from ..records.results import ResultRecord, Setting
from .report import Table, to_markdown
from .significance import (
    ALPHA,
    BETTER,
    DEFAULT_PERMUTATIONS,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    WORSE,
    HolmTested,
    PairedStats,
    Stratum,
    check_family,
    check_permutations,
    check_seed,
    difference_cells,
    format_p,
    holm_factors,
    x100,
)


@dataclass(frozen=True)
class Comparison(HolmTested):
    method: str
    vs: str
    column: str
    score: float
    vs_score: float
    diff: float
    low: float | None
    high: float | None
    p: float  # randomization test
    p_ttest: float | None
    queries: int
    p_adjusted: float | None = None  # Holm over the table's comparisons
    p_ttest_adjusted: float | None = None
    factor: int = 1  # the interval's level is 1 - ALPHA / factor (Holm's step for this comparison)


@dataclass
class TableComparisons:
    table: Table
    baseline: str | None  # None: every pair
    rows: list[Comparison]
    permutations: int
    resamples: int
    seed: int  # of the bootstrap and randomization draws

    def marks(self) -> dict[tuple[str, str], str]:
        """(method, column) -> marker against the baseline (only with a baseline)."""
        if self.baseline is None:
            return {}
        signs = {"better": BETTER, "worse": WORSE}
        return {(r.method, r.column): signs[r.verdict] for r in self.rows if r.verdict}


def check_measure(measure: str) -> None:
    """Only a mean over queries has a paired per-query difference to test."""
    from .. import metrics as M

    try:
        aggregate = M.get_measure(measure).aggregate
    except Exception:  # a name the metrics package does not parse (a study variant): treated as a mean
        return
    if aggregate != "mean" or measure == "p_mrr":
        raise UsageError(
            f"measure '{measure}' is not a mean over queries, so it has no paired per-query comparison",
            "compare on a per-query measure such as ndcg_at_10 (drop --baseline/--compare for this one)",
        )


class TableData:
    """The per-query scores behind one table, arranged as strata for `PairedStats`."""

    def __init__(
        self,
        table: Table,
        records: dict[tuple[str, str], ResultRecord],
        benchmark: str,
        permutations: int = DEFAULT_PERMUTATIONS,
        resamples: int = DEFAULT_RESAMPLES,
        seed: int = DEFAULT_SEED,
        reference: str | None = None,
    ):
        """`reference`: whose queries order each stratum (the baseline); methods with other queries there
        have no column, and comparing one of them stops with the counts (`require_same_queries`)."""
        self.table, self.records, self.benchmark = table, records, benchmark
        self.methods = [method for method, _ in table.rows]
        self.values = {(method, c): v for method, values in table.rows for c, v in zip(table.columns, values)}
        self.strata_index: dict[tuple[str, str], int] = {}
        self.queries: dict[tuple[str, str], dict[str, dict[str, float]]] = {}  # stratum -> method -> qid -> score
        self.reference: dict[tuple[str, str], str] = {}
        # stratum -> method -> a number per distinct set of queries scored there (equal numbers: the same queries)
        self.query_sets: dict[tuple[str, str], dict[str, int]] = {}
        strata: list[Stratum] = []
        for method in self.methods:
            for column in table.columns:
                if self.values[(method, column)] is None:
                    continue
                for key in self._cell(method, column):
                    if method not in self.queries.setdefault(key, {}):  # a subset's column and the average share it
                        self.queries[key][method] = self._scores(method, *key)
        for key, by_method in self.queries.items():
            self.strata_index[key] = len(strata)
            self.reference[key] = reference if reference in by_method else next(iter(by_method))
            order = sorted(by_method[self.reference[key]])
            numbered: dict[frozenset[str], int] = {}
            self.query_sets[key] = {
                m: numbered.setdefault(frozenset(scores), len(numbered)) for m, scores in by_method.items()
            }
            same = self.query_sets[key][self.reference[key]]
            columns = [
                [by_method[m][q] for q in order] if self.query_sets[key].get(m) == same else None for m in self.methods
            ]
            strata.append(Stratum.from_columns("/".join(key), columns))
        self.stats = PairedStats(strata, permutations, resamples, seed)

    def _cell(self, method: str, column: str) -> dict[tuple[str, str], float]:
        """(subset, language) -> weight of the cell's score for this method."""
        weights: dict[tuple[str, str], float] = {}
        for subset, w in self.table.sources.get(column, {}).items():
            record = self.records[(method, subset)]
            if self.table.setting == Setting.MONOLINGUAL.value:
                weights[(subset, record.native_language)] = w
            else:
                languages = sorted(record.languages)
                weights.update({(subset, lang): w / len(languages) for lang in languages})
        return weights

    def _scores(self, method: str, subset: str, language: str) -> dict[str, float]:
        record = self.records[(method, subset)]
        measure = self.table.measure
        scores = {
            qid: float(e.metrics[measure])
            for qid, e in record.per_query.items()
            if e.language == language and measure in e.metrics
        }
        if not scores:
            raise DataError(
                f"{self.benchmark}/{method}/{subset}: the result file has no per-query {measure} ({language} queries)",
                "rerun that subset: a comparison needs each query's score",
            )
        return scores

    def require_same_queries(self, a: str, b: str, column: str) -> dict[int, float]:
        """The cell's stratum weights, once a and b are known to share every query of it."""
        cell_a, cell_b = self._cell(a, column), self._cell(b, column)
        if set(cell_a) != set(cell_b):
            only = sorted({lang for _, lang in set(cell_a) ^ set(cell_b)})
            raise DataError(
                f"{self.table.title}, {column}: {a} and {b} were scored on different languages ({', '.join(only)})",
                "compare results run with the same --setting and languages",
            )
        for key in cell_a:
            sets = self.query_sets[key]
            if sets[a] == sets[b] and not self.stats.strata[self.strata_index[key]].present[self.methods.index(a)]:
                b = self.reference[key]  # both differ from the reference's queries: name that difference
            if sets[a] != sets[b]:
                qa, qb = self.queries[key][a], self.queries[key][b]
                subset, lang = key
                raise DataError(
                    f"{self.benchmark}/{subset} ({lang}): {a} has {len(qa)} scored queries and {b} {len(qb)}"
                    f" ({len(set(qa) ^ set(qb))} not in both); a paired comparison needs the same queries",
                    "rerun both methods on the same data (same revision, subsets and setting)",
                )
        return {self.strata_index[key]: w for key, w in cell_a.items()}

    def comparable(self, a: str, b: str, column: str) -> bool:
        return self.values[(a, column)] is not None and self.values[(b, column)] is not None

    def compare(self, a: str, b: str, column: str) -> Comparison | None:
        """a against b on one cell, its interval not yet set (`with_intervals`); None when either has no value."""
        score, vs_score = self.values[(a, column)], self.values[(b, column)]
        if score is None or vs_score is None:
            return None
        weights = self.require_same_queries(a, b, column)
        result = self.stats.compare(weights, self.methods.index(a), self.methods.index(b))
        return Comparison(
            a, b, column, score, vs_score, result.diff, None, None,
            result.p_randomization, result.p_ttest, result.queries,
        )  # fmt: skip

    def with_interval(self, row: Comparison, factor: int) -> Comparison:
        """The comparison with its interval at Holm's level for it (`PairedStats.shift_interval`)."""
        weights = self.require_same_queries(row.method, row.vs, row.column)
        low, high = self.stats.shift_interval(
            weights, self.methods.index(row.method), self.methods.index(row.vs), factor
        )
        return replace(row, low=low, high=high, factor=factor)

    def interval(self, method: str, column: str) -> tuple[float, float | None, float | None] | None:
        """The method's cell score with its stratified bootstrap interval (plots); None when blank."""
        if self.values[(method, column)] is None:
            return None
        weights = {self.strata_index[key]: w for key, w in self._cell(method, column).items()}
        found = self.stats.interval(weights, self.methods.index(method))
        return found.estimate, found.low, found.high


def index_records(results: list[ResultRecord]) -> dict[tuple[str, str], ResultRecord]:
    return {(r.method, r.subset): r for r in results}


def compare_tables(
    results: list[ResultRecord],
    tables: list[Table],
    benchmark: str,
    baseline: str | None = None,
    all_pairs: bool = False,
    permutations: int = DEFAULT_PERMUTATIONS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> list[TableComparisons]:
    """Each table's comparisons (against `baseline`, or every pair with `all_pairs`), Holm-adjusted per table."""
    check_permutations(permutations)
    check_seed(seed)
    methods = sorted({r.method for r in results})
    if baseline is not None and baseline not in methods:
        raise UsageError(
            f"--baseline {baseline} is not a method with results for {benchmark}", f"choose from {choices(methods)}"
        )
    records = index_records(results)
    out = []
    for table in tables:
        check_measure(table.measure)
        data = TableData(table, records, benchmark, permutations, resamples, seed, reference=baseline)
        pairs: list[tuple[str, str]] = []
        if all_pairs:
            pairs = [(b, a) for a, b in combinations(data.methods, 2)]  # later row against earlier row
        elif baseline is not None and baseline in data.methods:
            pairs = [(m, baseline) for m in data.methods if m != baseline]
        cells = [(a, b, column) for a, b in pairs for column in table.columns if data.comparable(a, b, column)]
        check_family(permutations, len(cells), f"table '{table.title}'")  # before any draw
        rows = [found for a, b, column in cells if (found := data.compare(a, b, column))]
        rows = [data.with_interval(r, f) for r, f in zip(adjust(rows), holm_factors([r.p for r in rows]))]
        out.append(TableComparisons(table, None if all_pairs else baseline, rows, permutations, resamples, seed))
    return out


def adjust(rows: list[Comparison]) -> list[Comparison]:
    from .significance import holm

    p = holm([r.p for r in rows])
    pt = holm([r.p_ttest for r in rows])
    return [replace(r, p_adjusted=a, p_ttest_adjusted=b) for r, a, b in zip(rows, p, pt)]


# -- rendering -----------------------------------------------------------------------------------------


def legend(tc: TableComparisons) -> str:
    test = (
        f"paired two-sided randomization test, {tc.permutations:,} permutations; "
        f"Holm-Bonferroni adjusted over the {len(tc.rows)} comparison{'' if len(tc.rows) == 1 else 's'} of this table"
    )
    if tc.baseline is not None:
        return f"{BETTER} / {WORSE}: better / worse than {tc.baseline} at p < {ALPHA} ({test})."
    return f"{BETTER} / {WORSE} after a difference: method better / worse than `vs` at p < {ALPHA} ({test})."


INTERVAL_RULE = (
    "Interval: the differences the same randomization test does not reject at the level Holm's step-down tested "
    "the comparison at (its confidence in `level`: 1 - 0.05 / (m - k + 1) for the k-th smallest p while every "
    "smaller one is significant, 1 - 0.05 / (m - r) for the rest, r significant), so it excludes 0 exactly when "
    "the difference is marked."
)


def comparisons_markdown(tc: TableComparisons, decimals: int = 1) -> str:
    """The legend, then one row per comparison: difference x100 with its interval and p-values."""
    against = f"against {tc.baseline}" if tc.baseline is not None else "every pair"
    lines = [
        legend(tc),
        "",
        f"#### Paired comparisons, {against}: difference x100 [Holm-adjusted randomization interval], p-values "
        "(randomization, t-test; raw and Holm-adjusted)",
        "",
        INTERVAL_RULE,
        "",
        "| method | vs | column | diff | interval | level | p | p adj. | p (t-test) | p adj. (t-test) | queries |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in tc.rows:
        diff, interval = difference_cells(r.diff, r.low, r.high, r.verdict, decimals)
        lines.append(
            f"| {r.method} | {r.vs} | {r.column} | {diff} | {interval} | {r.level if interval else ''} | "
            f"{format_p(r.p)} | {format_p(r.p_adjusted)} | {format_p(r.p_ttest)} | {format_p(r.p_ttest_adjusted)} | "
            f"{r.queries} |"
        )
    if not tc.rows:
        why = f"{tc.baseline} has no scores in this table" if tc.baseline is not None else "fewer than two methods"
        lines.append(f"| (no comparisons: {why}) |" + " |" * 10)
    return "\n".join(lines) + "\n"


CSV_COLUMNS = (
    "table", "column", "method", "vs", "score", "vs_score", "diff", "low", "high", "level",
    "p", "p_adjusted", "p_ttest", "p_ttest_adjusted", "queries", "verdict",
)  # fmt: skip


def comparisons_csv(comparisons: list[TableComparisons], decimals: int = 1) -> str:
    """One row per comparison; scores, differences and intervals x100 (two more decimals than the tables),
    p-values to 6 significant digits."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    places = decimals + 2

    def p6(p: float | None) -> str:
        return "" if p is None else f"{p:.6g}"

    for tc in comparisons:
        for r in tc.rows:
            writer.writerow(
                [
                    tc.table.title, r.column, r.method, r.vs, x100(r.score, places), x100(r.vs_score, places),
                    x100(r.diff, places), x100(r.low, places), x100(r.high, places),
                    r.level if r.low is not None else "", p6(r.p), p6(r.p_adjusted), p6(r.p_ttest), p6(r.p_ttest_adjusted), r.queries, r.verdict,
                ]
            )  # fmt: skip
    return buffer.getvalue()


def render_markdown(tables: list[Table], comparisons: list[TableComparisons], decimals: int = 1) -> str:
    """Each table with its markers, then its legend and comparisons."""
    by_table = {id(tc.table): tc for tc in comparisons}
    parts = []
    for table in tables:
        tc = by_table.get(id(table))
        if tc is None or not table.rows:
            parts.append(to_markdown(table, decimals))
        else:
            parts.append(
                to_markdown(table, decimals, tc.marks(), tc.baseline) + "\n" + comparisons_markdown(tc, decimals)
            )
    return "\n".join(parts)

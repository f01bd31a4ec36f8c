"""`report --plots DIR`: per table, bars per method and column with 95% bootstrap intervals, the baseline
hatched and drawn across its group, and the table's markers (▲ / ▼ against the baseline) above the bars;
for crosslingual results, one figure of language x subset heatmaps, a panel per method, on one colour
scale with a labelled colour bar.

The intervals are a method's score resampled as `comparisons.TableData` arranges it (queries resampled
within each subset and language).
"""

from __future__ import annotations

import math

from ..base.errors import DataError, UsageError
from ..records.results import ResultRecord, Setting
from .comparisons import TableComparisons, TableData, check_measure, index_records
from .plots import Figure, Panel, bars, heatmaps, slug
from .report import Table
from .significance import ALPHA, BETTER, DEFAULT_RESAMPLES, DEFAULT_SEED, WORSE


def _x100(found: tuple[float, float | None, float | None] | None):
    if found is None:
        return None
    estimate, low, high = found
    return estimate * 100, None if low is None else low * 100, None if high is None else high * 100


def marks_note(comparisons: TableComparisons | None) -> tuple[str | None, dict[tuple[str, str], str], dict[str, str]]:
    """The baseline, its markers ((method, column) -> ▲ / ▼) and what each means, for a table's figures."""
    if comparisons is None or comparisons.baseline is None:
        return None, {}, {}
    test = f"p < {ALPHA}, Holm over {len(comparisons.rows)}"
    marks = comparisons.marks()
    meanings = {
        BETTER: f"better than {comparisons.baseline} ({test})",
        WORSE: f"worse than {comparisons.baseline} ({test})",
    }
    return comparisons.baseline, marks, {mark: text for mark, text in meanings.items() if mark in marks.values()}


def table_bars(table: Table, data: TableData, comparisons: TableComparisons | None = None) -> Figure:
    """Bars for the columns where some method has a value (a crosslingual table often has one subset)."""
    columns = [c for c in table.columns if any(data.values[(m, c)] is not None for m in data.methods)]
    series = [(method, [_x100(data.interval(method, column)) for column in columns]) for method in data.methods]
    title = table.title.replace(" (x100)", "")
    baseline, marks, note = marks_note(comparisons)
    return bars(
        f"{slug(title)}-bars",
        f"{title}: means with 95% bootstrap intervals",
        columns,
        series,
        f"{table.measure} (x100)",
        baseline,
        marks,
        note,
    )


def plain_bars(table: Table) -> Figure:
    """Bars of the table's values without intervals (a measure with no per-query mean to resample)."""
    columns = [c for k, c in enumerate(table.columns) if any(v[k] is not None for _, v in table.rows)]
    index = {c: k for k, c in enumerate(table.columns)}
    series = [
        (method, [None if values[index[c]] is None else (values[index[c]] * 100, None, None) for c in columns])  # type: ignore[operator]
        for method, values in table.rows
    ]
    title = table.title.replace(" (x100)", "")
    return bars(
        f"{slug(title)}-bars",
        f"{title} (no intervals: no per-query scores)",
        columns,
        series,
        f"{table.measure} (x100)",
    )


def language_heatmaps(
    table: Table, records: dict[tuple[str, str], ResultRecord], comparisons: TableComparisons | None = None
) -> list[Figure]:
    """One figure for a crosslingual table: a panel per method (query language x subset, the per-language means),
    every panel on the same colour scale; the baseline's panel says so, and a subset the method is marked on
    (against the baseline, pooled over languages as the table) carries the marker after its name."""
    columns = [c for c in table.columns if c in table.sources and len(table.sources[c]) == 1]
    baseline, marks, note = marks_note(comparisons)
    panels = []
    for method, _ in table.rows:
        found = {s: records[(method, s)] for s in columns if (method, s) in records}
        found = {s: r for s, r in found.items() if r.setting is Setting.CROSSLINGUAL}
        if not found:
            continue
        languages = sorted({lang for r in found.values() for lang in r.languages})
        subsets = [s for s in columns if s in found]
        values = [
            [found[s].languages[lang].metrics.get(table.measure, math.nan) if lang in found[s].languages else math.nan
             for s in subsets]
            for lang in languages
        ]  # fmt: skip
        panel_marks = {s: marks[(method, s)] for s in subsets if (method, s) in marks}
        name = f"{method} (baseline)" if method == baseline else method
        panels.append(Panel(name, languages, subsets, values, panel_marks))
    if not panels:
        return []
    title = table.title.replace(" (x100)", "")
    caption = f"{title}: by query language (x100), one colour scale for every method"
    said = "; ".join(f"{mark} after a subset: {meaning}" for mark, meaning in note.items())
    return [heatmaps(f"{slug(title)}-languages", caption, panels, f"{table.measure} (x100)", said)]


def report_figures(
    results: list[ResultRecord],
    tables: list[Table],
    benchmark: str,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    comparisons: list[TableComparisons] | None = None,
) -> list[Figure]:
    """Each table's figures; with `comparisons` against a baseline, the baseline and markers drawn in them."""
    records = index_records(results)
    by_table = {id(tc.table): tc for tc in comparisons or []}
    figures: list[Figure] = []
    for table in tables:
        if not table.rows:
            continue
        compared = by_table.get(id(table))
        try:
            check_measure(table.measure)
            data = TableData(table, records, benchmark, permutations=1, resamples=resamples, seed=seed)
        except (UsageError, DataError):  # not a mean over queries, or no per-query scores: the means alone
            figures.append(plain_bars(table))
        else:
            figures.append(table_bars(table, data, compared))
        if table.setting == Setting.CROSSLINGUAL.value:
            figures.extend(language_heatmaps(table, records, compared))
    return figures

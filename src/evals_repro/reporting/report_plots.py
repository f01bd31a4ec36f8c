"""`report --plots DIR`: per table, bars per method and column with 95% bootstrap intervals; for
crosslingual results, a language x subset heatmap per method.

The intervals are those of `comparisons.TableData` (queries resampled within each subset and language),
so a bar's interval and the table's comparisons read the same draws.
"""

from __future__ import annotations

import math

from ..base.errors import DataError, UsageError
from ..records.results import ResultRecord, Setting
from .comparisons import TableData, check_measure, index_records
from .plots import Figure, bars, heatmap, slug
from .report import Table
from .significance import DEFAULT_RESAMPLES, DEFAULT_SEED


def _x100(found: tuple[float, float | None, float | None] | None):
    if found is None:
        return None
    estimate, low, high = found
    return estimate * 100, None if low is None else low * 100, None if high is None else high * 100


def table_bars(table: Table, data: TableData) -> Figure:
    """Bars for the columns where some method has a value (a crosslingual table often has one subset)."""
    columns = [c for c in table.columns if any(data.values[(m, c)] is not None for m in data.methods)]
    series = [(method, [_x100(data.interval(method, column)) for column in columns]) for method in data.methods]
    title = table.title.replace(" (x100)", "")
    return bars(
        f"{slug(title)}-bars",
        f"{title}: means with 95% bootstrap intervals",
        columns,
        series,
        f"{table.measure} (x100)",
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


def language_heatmaps(table: Table, records: dict[tuple[str, str], ResultRecord]) -> list[Figure]:
    """Per method of a crosslingual table: query language x subset, the per-language means."""
    figures = []
    columns = [c for c in table.columns if c in table.sources and len(table.sources[c]) == 1]
    for method, _ in table.rows:
        subsets = columns
        found = {s: records[(method, s)] for s in subsets if (method, s) in records}
        found = {s: r for s, r in found.items() if r.setting is Setting.CROSSLINGUAL}
        if not found:
            continue
        languages = sorted({lang for r in found.values() for lang in r.languages})
        subsets = [s for s in subsets if s in found]
        values = [
            [
                found[s].languages[lang].metrics.get(table.measure, math.nan)
                if s in found and lang in found[s].languages
                else math.nan
                for s in subsets
            ]
            for lang in languages
        ]
        title = table.title.replace(" (x100)", "")
        figures.append(
            heatmap(
                f"{slug(title)}-{slug(method)}-languages",
                f"{title}: {method} by query language (x100)",
                languages,
                subsets,
                values,
            )
        )
    return figures


def report_figures(
    results: list[ResultRecord],
    tables: list[Table],
    benchmark: str,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> list[Figure]:
    records = index_records(results)
    figures: list[Figure] = []
    for table in tables:
        if not table.rows:
            continue
        try:
            check_measure(table.measure)
            data = TableData(table, records, benchmark, permutations=1, resamples=resamples, seed=seed)
        except (UsageError, DataError):  # not a mean over queries, or no per-query scores: the means alone
            figures.append(plain_bars(table))
        else:
            figures.append(table_bars(table, data))
        if table.setting == Setting.CROSSLINGUAL.value:
            figures.extend(language_heatmaps(table, records))
    return figures

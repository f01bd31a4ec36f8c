"""Scores by query metadata (`report --by FIELD`), from the per-query metrics of result files.

A query counts once in every group its field names: `query_type` and `content_type` are lists
(a multi-hop numerical question counts under both), the others single values. The mean of a
group is over its queries (micro average across the given subsets and languages), so a row
reads "queries of this kind score X on average". Each method gets one table per setting.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.data import QUERY_METADATA_FIELDS
from ..base.errors import UsageError, choices
from ..metrics.protocol import running_mean
from ..records.results import ResultRecord, Setting

# The query metadata keys every loader writes (data.QUERY_METADATA_FIELDS): ViDoRe's `query_types`
# column is loaded as `query_type`, so one name means one thing everywhere.
FIELDS = QUERY_METADATA_FIELDS
MISSING = "(none)"


@dataclass(frozen=True)
class BreakdownRow:
    value: str
    queries: int
    mean: float


def _values(metadata: dict[str, Any], key: str) -> list[str]:
    value = metadata.get(key)
    if value is None or value == [] or value == "":
        return [MISSING]
    if isinstance(value, (list, tuple)):
        return sorted({str(v) for v in value})
    return [str(value)]


def _order(value: str) -> tuple:
    """Numbers numerically (relevant_pages 2 before 10), then text, `(none)` last."""
    if value == MISSING:
        return (2, 0, value)
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0, value)


def breakdown(
    results: Iterable[ResultRecord], field: str, measure: str = "ndcg_at_10", native_only: bool = False
) -> list[BreakdownRow]:
    """Rows (value, query count, mean `measure`) over every per-query entry of `results` (with
    `native_only`, over the queries in each subset's native language: the monolingual setting)."""
    if field not in FIELDS:
        raise UsageError(f"--by '{field}' is not a breakdown field", f"choose from {choices(FIELDS)}")
    groups: dict[str, list[float]] = {}
    seen_measures: set[str] = set()
    for result in results:
        for _, entry in sorted(result.per_query.items()):  # trec_eval's query order within a result
            if native_only and entry.language != result.native_language:
                continue
            seen_measures.update(entry.metrics)
            if measure not in entry.metrics:
                continue
            for value in _values(entry.metadata, field):
                groups.setdefault(value, []).append(float(entry.metrics[measure]))
    if seen_measures and measure not in seen_measures:
        raise UsageError(
            f"measure '{measure}' is not in the per-query results", f"choose from {choices(sorted(seen_measures))}"
        )
    return [
        BreakdownRow(value, len(scores), running_mean(scores))
        for value, scores in sorted(groups.items(), key=lambda item: _order(item[0]))
    ]


def breakdown_markdown(rows: list[BreakdownRow], field: str, measure: str, title: str = "", decimals: int = 1) -> str:
    """A markdown table: one row per metadata value, its query count and mean score x100."""
    lines = [f"### {title}", ""] if title else []
    lines += [f"| {field} | queries | {measure} (x100) |", "|---|---:|---:|"]
    for row in rows:
        lines.append(f"| {row.value} | {row.queries} | {row.mean * 100:.{decimals}f} |")
    if not rows:
        lines.append("| (no per-query results) | | |")
    return "\n".join(lines) + "\n"


def breakdown_tables(
    results_dir: Path,
    benchmark: str,
    field: str,
    measure: str = "ndcg_at_10",
    first_stage_only: bool = False,
    tie_rule: str | None = None,
    methods: list[str] | None = None,
) -> list[tuple[str, list[BreakdownRow]]]:
    """(title, rows) per method and setting with results for `benchmark` (what `report --by` prints), of
    `methods` in their order when given; given a tie rule, results computed with another one are left out.

    Settings are never pooled: the monolingual table reads the native-language queries of every
    result (a crosslingual result holds them too, as the main tables read its monolingual score),
    the crosslingual table only crosslingual results."""
    from .report import select_results

    stored, _ = select_results(results_dir, benchmark, first_stage_only, tie_rule, methods)
    by_method: dict[str, list[ResultRecord]] = {}
    for record in stored:
        by_method.setdefault(record.method, []).append(record)
    tables = []
    for method in [m for m in methods if m in by_method] if methods else sorted(by_method):
        results = by_method[method]
        for setting in Setting:
            native_only = setting is Setting.MONOLINGUAL
            chosen = results if native_only else [r for r in results if r.setting is Setting.CROSSLINGUAL]
            if not chosen:
                continue
            subsets = ", ".join(sorted(r.subset for r in chosen))
            title = f"{benchmark} — {method} — {setting.value} — by {field} ({subsets})"
            tables.append((title, breakdown(chosen, field, measure, native_only)))
    return tables


def breakdown_report(
    results_dir: Path,
    benchmark: str,
    field: str,
    measure: str = "ndcg_at_10",
    first_stage_only: bool = False,
    decimals: int = 1,
    tie_rule: str | None = None,
    fmt: str = "markdown",
    methods: list[str] | None = None,
) -> str:
    """The breakdown tables as Markdown, or as one CSV (`fmt="csv"`: table, value, queries, mean x100)."""
    tables = breakdown_tables(results_dir, benchmark, field, measure, first_stage_only, tie_rule, methods)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(["table", field, "queries", f"{measure} (x100)"])
        for title, rows in tables:
            for row in rows:
                writer.writerow([title, row.value, row.queries, f"{row.mean * 100:.{decimals}f}"])
        return buffer.getvalue()
    return "\n".join(breakdown_markdown(rows, field, measure, title, decimals) for title, rows in tables)

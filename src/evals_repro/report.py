"""Monolingual and crosslingual tables (methods x subsets, scores x 100) from result files.

The `avg` column is filled only when the method has every subset of the benchmark: a mean
over a partial suite is not comparable with anyone's published average.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from .errors import DataError, UsageError, choices
from .results import StoredResult, scan_results


@dataclass
class Table:
    title: str
    columns: list[str]  # subset names, then "avg"
    rows: list[tuple[str, list[float | None]]]  # method, one value per column


def _score(result: StoredResult, setting: str, measure: str) -> float | None:
    data = result.data
    if setting == "monolingual":
        block = data.get("languages", {}).get(data.get("native_language"))
        return None if block is None else block["metrics"].get(measure)
    if data.get("setting") != "crosslingual":
        return None
    return data.get("metrics", {}).get(measure)


def _method_order(results: list[StoredResult]) -> list[str]:
    """First stages alphabetically, each followed by the methods reranking it."""
    firsts: dict[str, list[str]] = {}
    for item in results:
        first = item.data.get("first_stage", item.method)
        firsts.setdefault(first, [])
        if item.method != first and item.method not in firsts[first]:
            firsts[first].append(item.method)
    ordered: list[str] = []
    for first in sorted(firsts):
        ordered.append(first)
        ordered.extend(sorted(firsts[first]))
    return ordered


def build_tables(
    results_dir: Path,
    benchmark: str,
    subsets: list[str],
    measure: str = "ndcg_at_10",
    first_stage_only: bool = False,
) -> list[Table]:
    results = scan_results(results_dir, benchmark)
    if not results:
        raise DataError(
            f"no complete result files under {Path(results_dir) / benchmark}",
            f"run `evals-repro run <method> --benchmark {benchmark}` first, or pass --results-dir",
        )
    if first_stage_only:
        results = [r for r in results if not r.data.get("reranked")]
    known_measures = {m for r in results for m in r.data.get("metrics", {})}
    if results and measure not in known_measures:
        raise UsageError(f"measure '{measure}' is not in the result files", f"choose from {choices(sorted(known_measures))}")
    tables = []
    for setting in ("monolingual", "crosslingual"):
        rows = []
        for method in _method_order(results):
            by_subset = {r.subset: _score(r, setting, measure) for r in results if r.method == method}
            values = [by_subset.get(s) for s in subsets]
            if all(v is None for v in values):
                continue
            complete = all(v is not None for v in values)
            avg = sum(values) / len(values) if complete else None  # type: ignore[arg-type]
            rows.append((method, values + [avg]))
        tables.append(Table(f"{benchmark} — {setting} — {measure} (x100)", subsets + ["avg"], rows))
    return tables


def _cell(value: float | None, decimals: int) -> str:
    return "" if value is None else f"{value * 100:.{decimals}f}"


def to_markdown(table: Table, decimals: int = 1) -> str:
    header = "| method | " + " | ".join(table.columns) + " |"
    rule = "|---|" + "|".join("---:" for _ in table.columns) + "|"
    lines = [f"### {table.title}", "", header, rule]
    for method, values in table.rows:
        lines.append(f"| {method} | " + " | ".join(_cell(v, decimals) for v in values) + " |")
    if not table.rows:
        lines.append("| (no results) |" + " |" * len(table.columns))
    return "\n".join(lines) + "\n"


def to_csv(tables: list[Table], decimals: int = 1) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["table", "method", *tables[0].columns] if tables else [])
    for table in tables:
        for method, values in table.rows:
            writer.writerow([table.title, method, *(_cell(v, decimals) for v in values)])
    return buffer.getvalue()

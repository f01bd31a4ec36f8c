"""Monolingual and crosslingual tables (methods x subsets, scores x 100) from result files.

The `avg` column is filled only when the method has every subset of the benchmark: a mean
over a partial suite is not comparable with anyone's published average. Results with float
gains also carry RCP-nDCG@10 (`ndcg_float_at_10`), tabled after `ndcg_at_10`; those computed
with another tie rule than the requested one are left out (and named), never mixed in.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from .errors import DataError, UsageError, choices
from .metrics.ndcg_float import DEFAULT_TIE_RULE
from .results import StoredResult, scan_results

# Measures tabled after the requested one when the result files have them.
COMPANIONS = {"ndcg_at_10": ("ndcg_float_at_10",)}


@dataclass
class Table:
    title: str
    columns: list[str]  # subset names, then "avg"
    rows: list[tuple[str, list[float | None]]]  # method, one value per column


def subset_score(result: StoredResult, setting: str, measure: str) -> float | None:
    data = result.data
    if setting == "monolingual":
        block = data.get("languages", {}).get(data.get("native_language"))
        return None if block is None else block["metrics"].get(measure)
    if data.get("setting") != "crosslingual":
        return None
    return data.get("metrics", {}).get(measure)


def method_order(results: list[StoredResult]) -> list[str]:
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


def tie_rule_of(result: StoredResult) -> str | None:
    """The tie rule a result's float-gain measures used (None: it has none)."""
    return result.data.get("config", {}).get("tie_rule")


def select_results(
    results_dir: Path,
    benchmark: str,
    first_stage_only: bool = False,
    tie_rule: str | None = DEFAULT_TIE_RULE,
) -> tuple[list[StoredResult], list[str]]:
    """The complete results to report, and notes on what was left out (other tie rules)."""
    results = scan_results(results_dir, benchmark)
    if not results:
        raise DataError(
            f"no complete result files under {Path(results_dir) / benchmark}",
            f"run `evals-repro run <method> --benchmark {benchmark}` first, or pass --results-dir",
        )
    if first_stage_only:
        results = [r for r in results if not r.data.get("reranked")]
    if tie_rule is None:
        return results, []
    other = [r for r in results if tie_rule_of(r) not in (None, tie_rule)]
    kept = [r for r in results if tie_rule_of(r) in (None, tie_rule)]
    rules = sorted({rule for r in other if (rule := tie_rule_of(r)) is not None})
    if other and not kept:
        raise DataError(
            f"no result of {benchmark} was computed with tie rule {tie_rule} (they used {', '.join(rules)})",
            f"pass --tie-rule {rules[0]}, or rerun with --tie-rule {tie_rule}",
        )
    notes = []
    if other:
        by_method: dict[str, list[str]] = {}
        for r in other:
            by_method.setdefault(f"{r.method} ({tie_rule_of(r)})", []).append(r.subset)
        listed = "; ".join(f"{m}: {', '.join(s)}" for m, s in by_method.items())
        notes.append(f"not shown, computed with another tie rule than {tie_rule}: {listed}")
    return kept, notes


def report_measures(results: list[StoredResult], measure: str) -> list[str]:
    """The requested measure, then its companions that the result files carry."""
    known = {m for r in results for m in r.data.get("metrics", {})}
    if results and measure not in known:
        raise UsageError(f"measure '{measure}' is not in the result files", f"choose from {choices(sorted(known))}")
    return [measure, *(m for m in COMPANIONS.get(measure, ()) if m in known)]


def build_tables(
    results_dir: Path,
    benchmark: str,
    subsets: list[str],
    measure: str = "ndcg_at_10",
    first_stage_only: bool = False,
    tie_rule: str | None = DEFAULT_TIE_RULE,
) -> list[Table]:
    """Monolingual and crosslingual tables per measure (the requested one, then its companions)."""
    results, _ = select_results(results_dir, benchmark, first_stage_only, tie_rule)
    return [table for m in report_measures(results, measure) for table in subset_tables(results, benchmark, subsets, m)]


def declared_report(
    results_dir: Path,
    decl,
    measure: str = "ndcg_at_10",
    first_stage_only: bool = False,
    tie_rule: str | None = DEFAULT_TIE_RULE,
) -> tuple[list[Table], list[str]]:
    """Every table of a declared benchmark (per measure: its summary views, if any, then the
    subset tables) and the notes on results left out."""
    from .rcp.views import domain_views

    results, notes = select_results(results_dir, decl.name, first_stage_only, tie_rule)
    tables = []
    for m in report_measures(results, measure):
        views = domain_views(results, decl, m)
        subset_level = subset_tables(results, decl.name, decl.subset_names, m)
        if views:  # one query language per subset: an empty crosslingual table says nothing
            subset_level = [t for t in subset_level if t.rows or "crosslingual" not in t.title]
        for table in views + subset_level:
            if m.startswith("ndcg_float") and tie_rule is not None:
                table.title = table.title.replace(f"{m} (x100)", f"{m}, {tie_rule} ties (x100)")
            tables.append(table)
    return tables, notes


def subset_tables(results: list[StoredResult], benchmark: str, subsets: list[str], measure: str) -> list[Table]:
    tables = []
    for setting in ("monolingual", "crosslingual"):
        rows = []
        for method in method_order(results):
            by_subset = {r.subset: subset_score(r, setting, measure) for r in results if r.method == method}
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

"""Monolingual and crosslingual tables (methods x subsets, scores x 100) from result records.

The `avg` column is filled only when the method has every subset of the benchmark: a mean over a
partial suite is not comparable with anyone's published average. A benchmark with one query
language gets the monolingual table only. Results with float gains also carry RCP-nDCG@10
(`ndcg_float_at_10`), tabled after `ndcg_at_10`; those computed with another tie rule than the
requested one are left out (and named), never mixed in. rcp benchmarks add the rcp-ndcg paper's
native-language and language-mean views per domain.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import DataError, UsageError, choices
from ..benchmarks.declaration import BenchmarkDeclaration
from ..metrics.protocol import running_mean
from ..records.results import ResultRecord, Setting, scan_records

DEFAULT_TIE_RULE = "group-mean"
# Measures tabled after the requested one when the result files have them.
COMPANIONS = {"ndcg_at_10": ("ndcg_float_at_10",)}


@dataclass
class Table:
    title: str
    columns: list[str]  # subset names, then "avg"
    rows: list[tuple[str, list[float | None]]]  # method, one value per column
    # What each cell averages, for paired comparisons (`comparisons.py`): the measure, the setting whose
    # scores it reads, and per column the subsets with their weights (a subset column: itself, 1.0).
    measure: str = ""
    setting: str = Setting.MONOLINGUAL.value
    sources: dict[str, dict[str, float]] = field(default_factory=dict)
    cost: dict[str, str] | None = None  # `report --cost`: method -> what its results cost (USD), a last column


def method_order(results: list[ResultRecord]) -> list[str]:
    """First stages alphabetically, each followed by the methods reranking it."""
    firsts: dict[str, list[str]] = {}
    for record in results:
        firsts.setdefault(record.first_stage, [])
        if record.method != record.first_stage and record.method not in firsts[record.first_stage]:
            firsts[record.first_stage].append(record.method)
    ordered: list[str] = []
    for first in sorted(firsts):
        ordered.append(first)
        ordered.extend(sorted(firsts[first]))
    return ordered


def select_results(
    results_dir: Path, benchmark: str, first_stage_only: bool = False, tie_rule: str | None = DEFAULT_TIE_RULE
) -> tuple[list[ResultRecord], list[str]]:
    """The results to report, and notes on what was left out (other tie rules) and on a method whose subsets
    were made by different identities of a plugin or Python object (`provenance.py`).

    A damaged result file stops the report with its name (DamagedResult): a table silently
    missing a subset would be read as complete.
    """
    results = [record for _, record in scan_records(results_dir, benchmark)]
    if not results:
        raise DataError(
            f"no complete result files under {Path(results_dir) / benchmark}",
            f"run `evals-repro run <method> --benchmark {benchmark}` first, or pass --results-dir",
        )
    if first_stage_only:
        results = [r for r in results if not r.reranked]
    from .provenance import mixed_identity_notes

    if tie_rule is None:
        return results, mixed_identity_notes(results)
    other = [r for r in results if r.tie_rule not in (None, tie_rule)]
    kept = [r for r in results if r.tie_rule in (None, tie_rule)]
    rules = sorted({str(r.tie_rule) for r in other})
    if other and not kept:
        raise DataError(
            f"no result of {benchmark} was computed with tie rule {tie_rule} (they used {', '.join(rules)})",
            f"pass --tie-rule {rules[0]}, or rerun with --tie-rule {tie_rule}",
        )
    notes = []
    if other:
        by_method: dict[str, list[str]] = {}
        for r in other:
            by_method.setdefault(f"{r.method} ({r.tie_rule})", []).append(r.subset)
        listed = "; ".join(f"{m}: {', '.join(s)}" for m, s in by_method.items())
        notes.append(f"not shown, computed with another tie rule than {tie_rule}: {listed}")
    return kept, notes + mixed_identity_notes(kept)


def report_measures(results: list[ResultRecord], measure: str) -> list[str]:
    """The requested measure, then its companions that the result files carry."""
    known = {m for r in results for m in r.metrics}
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
    decl: BenchmarkDeclaration,
    measure: str = "ndcg_at_10",
    first_stage_only: bool = False,
    tie_rule: str | None = DEFAULT_TIE_RULE,
    cost: bool = False,
) -> tuple[list[Table], list[str]]:
    """Every table of a declared benchmark (per measure: its summary views, if any, then the subset
    tables) and the notes on what was left out."""
    results, notes = select_results(results_dir, decl.name, first_stage_only, tie_rule)
    single_language = len(decl.query_languages) <= 1
    if single_language:
        notes.append(f"{decl.name} has one query language ({decl.query_languages[0]}): monolingual only")
    tables = []
    for m in report_measures(results, measure):
        views = domain_views(results, decl, m)
        settings = [Setting.MONOLINGUAL] if single_language else [Setting.MONOLINGUAL, Setting.CROSSLINGUAL]
        subset_level = subset_tables(results, decl.name, decl.subset_names, m, settings)
        if views:  # one query language per subset: an empty crosslingual table says nothing
            subset_level = [t for t in subset_level if t.rows or Setting.CROSSLINGUAL.value not in t.title]
        for table in views + subset_level:
            if m.startswith("ndcg_float") and tie_rule is not None:
                table.title = table.title.replace(f"{m} (x100)", f"{m}, {tie_rule} ties (x100)")
            tables.append(table)
    return (with_costs(tables, results) if cost else tables), notes


def subset_tables(
    results: list[ResultRecord],
    benchmark: str,
    subsets: list[str],
    measure: str,
    settings: list[Setting] | None = None,
) -> list[Table]:
    tables = []
    for setting in settings or list(Setting):
        rows = []
        for method in method_order(results):
            by_subset = {r.subset: r.score(setting, measure) for r in results if r.method == method}
            values = [by_subset.get(s) for s in subsets]
            if all(v is None for v in values):
                continue
            rows.append((method, values + [_mean(values)]))
        sources = {s: {s: 1.0} for s in subsets} | {"avg": dict.fromkeys(subsets, 1 / len(subsets))}
        title = f"{benchmark} — {setting.value} — {measure} (x100)"
        tables.append(Table(title, subsets + ["avg"], rows, measure, setting.value, sources))
    return tables


def method_costs(results: list[ResultRecord]) -> dict[str, str]:
    """What each method's results cost, summed over its subsets (`report --cost`), worded as every cost is
    (`prices.cost_text`): USD at each record's price table, "price unknown: <model>" when a model had no
    price, "self-hosted: no price" for work on servers of your own, and "not recorded" for paid results
    written before costs were kept; results that billed nothing cost $0."""
    from ..providers.prices import cost_text

    totals: dict[str, float] = {}
    unknown: dict[str, list[str]] = {}
    self_hosted: set[str] = set()
    unrecorded: set[str] = set()
    for record in results:
        totals.setdefault(record.method, 0.0)
        if record.cost is None:
            if any(key.endswith("_requests") and value for key, value in record.usage.items()):
                unrecorded.add(record.method)
            continue
        totals[record.method] += record.cost.usd_priced
        if record.cost.self_hosted:
            self_hosted.add(record.method)
        for name in record.cost.price_unknown:
            if name not in unknown.setdefault(record.method, []):
                unknown[record.method].append(name)
    shown = {}
    for method, usd in totals.items():
        text = cost_text(usd, unknown.get(method, []), method in self_hosted)
        if method in unrecorded:
            text = "not recorded" if text == "$0" else f"{text} + not recorded"
        shown[method] = text
    return shown


def with_costs(tables: list[Table], results: list[ResultRecord]) -> list[Table]:
    costs = method_costs(results)
    for table in tables:
        table.cost = {method: costs.get(method, "") for method, _ in table.rows}
    return tables


def _mean(values: list[float | None]) -> float | None:
    """The mean, only when every value is present: a partial mean is not comparable."""
    if not values or any(v is None for v in values):
        return None
    return running_mean(values)  # type: ignore[arg-type]


def domain_views(results: list[ResultRecord], decl: BenchmarkDeclaration, measure: str) -> list[Table]:
    """The rcp-ndcg paper's two summary views of `{domain}__{language}` subsets; [] for other benchmarks.

    - native-language view: each domain scored on its questions in the language they were written
      in (the declaration's `[native]` table);
    - language-mean view: each domain's mean over its query-language subsets, then the mean over domains.
    A cell is filled only when every subset it averages is present, the `mean` only when every domain is.
    """
    native = decl.extra.get("native")
    if decl.loader != "rcp" or not isinstance(native, dict) or not native:
        return []
    domains = list(native)
    languages = list(decl.query_languages)
    native_rows, mean_rows = [], []
    for method in method_order(results):
        scores = {r.subset: r.score(Setting.MONOLINGUAL, measure) for r in results if r.method == method}
        by_native = [scores.get(f"{d}__{native[d]}") for d in domains]
        by_mean = [_mean([scores.get(f"{d}__{lang}") for lang in languages]) for d in domains]
        if any(v is not None for v in by_native):
            native_rows.append((method, by_native + [_mean(by_native)]))
        if any(v is not None for v in by_mean):
            mean_rows.append((method, by_mean + [_mean(by_mean)]))
    columns = domains + ["mean"]
    native_sources = {d: {f"{d}__{native[d]}": 1.0} for d in domains}
    mean_sources = {d: {f"{d}__{lang}": 1 / len(languages) for lang in languages} for d in domains}
    native_sources["mean"] = {f"{d}__{native[d]}": 1 / len(domains) for d in domains}
    mean_sources["mean"] = {f"{d}__{lang}": 1 / (len(domains) * len(languages)) for d in domains for lang in languages}
    mono = Setting.MONOLINGUAL.value
    return [
        Table(
            f"{decl.name} — native-language view — {measure} (x100)",
            columns,
            native_rows,
            measure,
            mono,
            native_sources,
        ),
        Table(
            f"{decl.name} — {len(languages)}-language mean view — {measure} (x100)",
            columns,
            mean_rows,
            measure,
            mono,
            mean_sources,
        ),
    ]


def _cell(value: float | None, decimals: int) -> str:
    return "" if value is None else f"{value * 100:.{decimals}f}"


def to_markdown(table: Table, decimals: int = 1, marks: dict[tuple[str, str], str] | None = None) -> str:
    """The table as Markdown; `marks` appends a marker to a (method, column) cell (`report --baseline`)."""
    extra = [] if table.cost is None else ["cost (USD)"]
    header = "| method | " + " | ".join(table.columns + extra) + " |"
    rule = "|---|" + "|".join("---:" for _ in table.columns + extra) + "|"
    lines = [f"### {table.title}", "", header, rule]
    marks = marks or {}
    for method, values in table.rows:
        cells = [_cell(v, decimals) + marks.get((method, c), "") for c, v in zip(table.columns, values)]
        cells += [table.cost.get(method, "")] if table.cost is not None else []
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    if not table.rows:
        lines.append("| (no results) |" + " |" * len(table.columns + extra))
    return "\n".join(lines) + "\n"


def to_csv(tables: list[Table], decimals: int = 1) -> str:
    """One rectangular CSV: the header holds every table's columns (an rcp benchmark's domain views, then
    its subsets), each value goes under its own column and a table leaves the others empty."""
    columns = list(dict.fromkeys(column for table in tables for column in table.columns))
    costed = any(table.cost is not None for table in tables)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["table", "method", *columns, *(["cost_usd"] if costed else [])] if tables else [])
    for table in tables:
        for method, values in table.rows:
            cells = {column: _cell(v, decimals) for column, v in zip(table.columns, values)}
            cost = [(table.cost or {}).get(method, "").lstrip("$")] if costed else []
            writer.writerow([table.title, method, *(cells.get(column, "") for column in columns), *cost])
    return buffer.getvalue()

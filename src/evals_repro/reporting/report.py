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
from collections.abc import Collection, Sequence
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
    # Rows that are printed figures of a source (`report --published`), not methods run here: never ranked (bold).
    references: set[str] = field(default_factory=set)


def method_order(results: list[ResultRecord], chosen: Sequence[str] | None = None) -> list[str]:
    """The methods in `chosen`'s order (`report --methods`); by default first stages alphabetically, each
    followed by the methods reranking it."""
    if chosen:
        present = {record.method for record in results}
        return [method for method in chosen if method in present]
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


def per_query_measures(measures: Sequence[str]) -> frozenset[str]:
    """The measures whose per-query scores a report of `measures` reads (for its comparisons and figures): them
    and their companions (`select_results`' per_query)."""
    return frozenset(name for m in measures for name in (m, *COMPANIONS.get(m, ())))


def select_results(
    results_dir: Path,
    benchmark: str,
    first_stage_only: bool = False,
    tie_rule: str | None = DEFAULT_TIE_RULE,
    methods: Sequence[str] | None = None,
    per_query: Collection[str] | None = None,
) -> tuple[list[ResultRecord], list[str]]:
    """The results to report (of `methods` only, when given), and notes on what was left out (other tie rules)
    and on a method whose subsets were made by different identities of a plugin or Python object (`provenance.py`).
    `per_query`: the measures whose per-query scores are read (None: all; the tables need none of them).

    A damaged result file stops the report with its name (DamagedResult): a table silently
    missing a subset would be read as complete.
    """
    results = [record for _, record in scan_records(results_dir, benchmark, per_query)]
    if not results:
        raise DataError(
            f"no complete result files under {Path(results_dir) / benchmark}",
            f"run `evals-repro run <method> --benchmark {benchmark}` first, or pass --results-dir",
        )
    if methods:
        results = chosen_results(results, methods, benchmark, first_stage_only)
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


def chosen_results(
    results: list[ResultRecord], methods: Sequence[str], benchmark: str, first_stage_only: bool
) -> list[ResultRecord]:
    """The results of `report --methods`; a name without results, or a reranked one that --first-stage-only
    would hide, is refused (a table silently missing a row the user asked for reads as complete)."""
    known = sorted({r.method for r in results})
    missing = [m for m in methods if m not in known]
    if missing:
        raise UsageError(
            f"--methods {', '.join(missing)}: no results of {benchmark} for {'it' if len(missing) == 1 else 'them'}",
            f"choose from {choices(known)} (run a method first to report it)",
        )
    if first_stage_only:
        reranked = [m for m in methods if any(r.reranked for r in results if r.method == m)]
        if reranked:
            raise UsageError(
                f"--methods {', '.join(reranked)}: reranked, and --first-stage-only hides reranked methods",
                "drop those names from --methods, or drop --first-stage-only",
            )
    wanted = set(methods)
    return [r for r in results if r.method in wanted]


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
    methods: Sequence[str] | None = None,
    per_query: Collection[str] | None = None,
) -> tuple[list[Table], list[str]]:
    """Every table of a declared benchmark (per measure: its summary views, if any, then the subset
    tables) and the notes on what was left out; `methods` chooses and orders the rows; `per_query`: the
    measures whose per-query scores are read (`select_results`)."""
    results, notes = select_results(results_dir, decl.name, first_stage_only, tie_rule, methods, per_query)
    single_language = len(decl.query_languages) <= 1
    if single_language:
        notes.append(f"{decl.name} has one query language ({decl.query_languages[0]}): monolingual only")
    tables = []
    for m in report_measures(results, measure):
        views = domain_views(results, decl, m, methods)
        settings = [Setting.MONOLINGUAL] if single_language else [Setting.MONOLINGUAL, Setting.CROSSLINGUAL]
        subset_level = subset_tables(results, decl.name, decl.subset_names, m, settings, methods)
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
    methods: Sequence[str] | None = None,
) -> list[Table]:
    tables = []
    for setting in settings or list(Setting):
        rows = []
        for method in method_order(results, methods):
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


def domain_views(
    results: list[ResultRecord], decl: BenchmarkDeclaration, measure: str, methods: Sequence[str] | None = None
) -> list[Table]:
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
    for method in method_order(results, methods):
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


BASELINE_MARK = " (baseline)"  # after the baseline's name in every table (`report --baseline`)
BOLD_RULE = "Bold: each column's best value as printed; every method tied at it is bold."
BOLD_RULE_REFERENCES = " Published rows are not ranked."


def higher_is_better(measure: str) -> bool:
    """Whether the measure has a better side (not a count or diagnostic); a name the metrics package does not
    parse (a study variant) is a quality measure."""
    from .. import metrics as M
    from ..base.errors import EvalsError

    try:
        return M.get_measure(measure).higher_is_better
    except EvalsError:
        return True


def best_cells(table: Table, decimals: int) -> set[tuple[str, str]]:
    """(method, column) of each column's best value as printed: the highest printed score and every method tied
    at it (two methods that print the same number are not told apart). None in a column where fewer than two
    methods have a value, nor for a measure with no better side."""
    if not higher_is_better(table.measure):
        return set()
    best: set[tuple[str, str]] = set()
    for k, column in enumerate(table.columns):
        printed = {
            method: float(_cell(values[k], decimals))
            for method, values in table.rows
            if values[k] is not None and method not in table.references
        }
        if len(printed) < 2:
            continue
        top = max(printed.values())
        best.update((method, column) for method, value in printed.items() if value == top)
    return best


def to_markdown(
    table: Table, decimals: int = 1, marks: dict[tuple[str, str], str] | None = None, baseline: str | None = None
) -> str:
    """The table as Markdown: each column's best value bold, `marks` appended to a (method, column) cell and the
    baseline's row named so (`report --baseline`)."""
    extra = [] if table.cost is None else ["cost (USD)"]
    header = "| method | " + " | ".join(table.columns + extra) + " |"
    rule = "|---|" + "|".join("---:" for _ in table.columns + extra) + "|"
    lines = [f"### {table.title}", "", header, rule]
    marks = marks or {}
    best = best_cells(table, decimals)
    for method, values in table.rows:
        cells = [
            (f"**{_cell(v, decimals)}**" if (method, c) in best else _cell(v, decimals)) + marks.get((method, c), "")
            for c, v in zip(table.columns, values)
        ]
        cells += [table.cost.get(method, "")] if table.cost is not None else []
        name = method + BASELINE_MARK if method == baseline else method
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if not table.rows:
        lines.append("| (no results) |" + " |" * len(table.columns + extra))
    if best:
        lines += ["", BOLD_RULE + (BOLD_RULE_REFERENCES if table.references else "")]
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

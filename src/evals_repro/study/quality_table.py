"""The study's quality numbers: per dataset, per group, overall; `quality.csv` and the report's tables.

Each dataset (a benchmark subset) is scored on its declared measures (`[study] measures`, recorded
in the manifest when it was prepared). A subset's score exists only when every one of its queries
was scored; a group's score is the mean over its datasets of each one's headline measure
(`[study] measure`: alpha-nDCG@10 for FreshStack, nDCG@10 elsewhere), only when all are complete;
the overall score weighs every group of the suite equally, only when every group is complete.
Blank cells mark what is missing. In the report's quality tables each column's best value as printed is bold
(the first stage ranked with the models), by `report`'s own rule (reporting.report.best_cells) and with its
line under the table; a measure with no better side bolds nothing.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..base.io import read_jsonl
from ..metrics.protocol import running_mean
from ..reporting.report import BOLD_RULE, Table, best_cells, higher_is_better
from .models import current_rows, reported_versions
from .quality import QUALITY, load_prepared
from .scoring import score_queries

BASELINE = "first stage"
LEGACY_MEASURES = ("ndcg_at_10", "recall_at_10", "mrr_at_10", "map_at_100")  # manifests before [study]
TOP_K = 100


def _mean(values: list[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return running_mean(values)  # type: ignore[arg-type]


def study_of(entry: dict[str, Any]) -> dict[str, Any]:
    study = dict(entry.get("study") or {})
    study.setdefault("group", entry["benchmark"])
    study.setdefault("measure", "ndcg_at_10")
    study.setdefault("measures", list(LEGACY_MEASURES))
    return study


def identical_ids(entry: dict[str, Any]) -> bool:
    """The dataset's `ignore_identical_ids` as prepared (a manifest from before it was recorded: its declaration's)."""
    if "ignore_identical_ids" in entry:
        return bool(entry["ignore_identical_ids"])
    from ..base.errors import EvalsError
    from ..benchmarks import get_benchmark

    try:
        return bool(get_benchmark(entry["benchmark"]).subset_source(entry["subset"]).get("ignore_identical_ids"))
    except EvalsError:
        return False


def quality_scores(study_dir: Path) -> dict[str, Any]:
    """{"models", "groups", "benchmarks": {bench: {subset: {"queries", "first_stage", "group", "measure",
    "measures", "scores": {model: {measure: value | None}}}}}}."""
    manifest, items = load_prepared(study_dir)
    by_subset: dict[tuple[str, str], list] = defaultdict(list)
    for candidate, _ in items:
        by_subset[(candidate.benchmark, candidate.subset)].append(candidate)
    answers: dict[tuple[str, str], dict[str, dict[str, list[float]]]] = defaultdict(dict)
    cut: dict[tuple[str, str], dict[str, dict[str, int]]] = defaultdict(dict)
    versions = reported_versions(manifest)
    answered = [r for r in read_jsonl(Path(study_dir) / QUALITY, damaged="skip") if r.get("status") == "ok"]
    for record in current_rows(answered, versions):  # a plugin's rows of the version its last session ran
        if record.get("status") == "ok":
            answers[(record["benchmark"], record["subset"])].setdefault(record["model"], {})[
                record["request_digest"]
            ] = record["scores"]
            cut[(record["benchmark"], record["subset"])].setdefault(record["model"], {})[record["request_digest"]] = (
                record.get("truncated_documents") or 0
            )
    models = sorted(manifest.get("models", {}))
    table: dict[str, Any] = {}
    groups: list[str] = list(manifest.get("suite", []))
    for (bench, subset), candidates in sorted(by_subset.items()):
        entry = manifest["datasets"][f"{bench}/{subset}"]
        study = study_of(entry)
        measures = list(study["measures"])
        runs = {BASELINE: {c.query_id: dict(zip(c.ids, c.scores)) for c in candidates}}
        for model in models:
            got = answers[(bench, subset)].get(model, {})
            if all(c.request_digest in got for c in candidates):
                runs[model] = {c.query_id: dict(zip(c.ids, got[c.request_digest])) for c in candidates}
        scores: dict[str, dict[str, float | None]] = {}
        per_query: dict[str, dict[str, float]] = {}  # complete runs: query -> headline measure
        for name in [BASELINE, *models]:
            if name in runs:
                values, queries = score_queries(
                    candidates, runs[name], measures, TOP_K, ignore_identical_ids=identical_ids(entry)
                )
                scores[name] = {m: (None if math.isnan(v) else v) for m, v in values.items()}
                per_query[name] = queries.get(study["measure"], {})
            else:
                scores[name] = dict.fromkeys(measures)
        if study["group"] not in groups:
            groups.append(study["group"])
        table.setdefault(bench, {})[subset] = {
            "queries": len(candidates),
            "first_stage": entry["first_stage"],
            "group": study["group"],
            "measure": study["measure"],
            "measures": measures,
            "scores": scores,
            "per_query": per_query,
            # documents each model had to cut to fit its context, over the subset's answered requests
            "truncated_documents": {m: sum(cut[(bench, subset)].get(m, {}).values()) for m in models},
        }
    return {"models": models, "groups": groups, "benchmarks": table}


def benchmark_means(quality: dict[str, Any], bench: str, measure: str) -> dict[str, float | None]:
    """Model -> mean of `measure` over the benchmark's subsets (subsets weigh equally)."""
    subsets = quality["benchmarks"][bench].values()
    return {n: _mean([row["scores"][n].get(measure) for row in subsets]) for n in [BASELINE, *quality["models"]]}


def group_scores(quality: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Group -> model -> mean over the group's datasets of each one's headline measure."""
    names = [BASELINE, *quality["models"]]
    rows: dict[str, list[dict[str, Any]]] = {g: [] for g in quality["groups"]}
    for subsets in quality["benchmarks"].values():
        for row in subsets.values():
            rows.setdefault(row["group"], []).append(row)
    return {
        group: {n: _mean([r["scores"][n].get(r["measure"]) for r in members]) for n in names}
        for group, members in rows.items()
    }


def overall_scores(quality: dict[str, Any], groups: dict[str, dict[str, float | None]]) -> dict[str, float | None]:
    names = [BASELINE, *quality["models"]]
    return {n: _mean([groups[g][n] for g in quality["groups"]]) for n in names}


DECIMALS = 1  # x100 scores as the report prints them


def pct(value: float | None) -> str:
    return "" if value is None else f"{value * 100:.{DECIMALS}f}"


def _ranked_measure(measures: set[str]) -> str:
    """The measure whose direction decides a column's bold: one of `measures` with no better side if any (then
    nothing in the column is bold), else any of them."""
    return min((m for m in measures if not higher_is_better(m)), default=min(measures, default=""))


def best_printed(
    rows: dict[str, list[float | None]], columns: list[str], measures: list[set[str]]
) -> set[tuple[str, str]]:
    """(name, column) of each column's best value as printed, by `report`'s rule (reporting.report.best_cells):
    `rows` name -> one value per column, `measures` per column the measures its values are of."""
    best: set[tuple[str, str]] = set()
    for k, (column, of) in enumerate(zip(columns, measures)):
        single = Table("", [column], [(name, [values[k]]) for name, values in rows.items()], _ranked_measure(of))
        best |= best_cells(single, DECIMALS)
    return best


def _shown(value: float | None, bold: bool) -> str:
    return f"**{pct(value)}**" if bold else pct(value)


def headline_note(quality: dict[str, Any]) -> str:
    measures = _headline_measures(quality)
    parts = [f"{g}: {', '.join(sorted(measures[g])) or 'not prepared'}" for g in quality["groups"]]
    return "Headline measure per group: " + "; ".join(parts) + "."


def quality_markdown(quality: dict[str, Any], marks: dict[tuple[str, str], str] | None = None) -> list[str]:
    """The overall table (`marks`: (model, group or "overall") -> a marker after the score)."""
    marks = marks or {}
    names = [BASELINE, *quality["models"]]
    groups = group_scores(quality)
    overall = overall_scores(quality, groups)
    order = quality["groups"]
    columns = [*order, "overall"]
    rows = {n: [*(groups[g][n] for g in order), overall[n]] for n in names}
    headlines = _headline_measures(quality)
    measures = [headlines.get(g, set()) for g in order]
    best = best_printed(rows, columns, [*measures, set().union(*measures)])
    lines = [
        "## Overall quality (x100; each group weighs the same; blank = incomplete)",
        "",
        "| model | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for n in names:
        cells = [_shown(v, (n, c) in best) + marks.get((n, c), "") for c, v in zip(columns, rows[n])]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines += ["", *([BOLD_RULE, ""] if best else []), headline_note(quality)]
    return lines


def _headline_measures(quality: dict[str, Any]) -> dict[str, set[str]]:
    """Group -> the headline measures of its datasets."""
    measures: dict[str, set[str]] = defaultdict(set)
    for subsets in quality["benchmarks"].values():
        for row in subsets.values():
            measures[row["group"]].add(row["measure"])
    return measures


def benchmark_markdown(quality: dict[str, Any], bench: str) -> list[str]:
    names = [BASELINE, *quality["models"]]
    subsets = quality["benchmarks"][bench]
    measures = list(dict.fromkeys(m for row in subsets.values() for m in row["measures"]))
    lines: list[str] = []
    for measure in measures:
        means = benchmark_means(quality, bench, measure)
        columns = [*subsets, "mean"]
        rows = {n: [*(row["scores"][n].get(measure) for row in subsets.values()), means[n]] for n in names}
        best = best_printed(rows, columns, [{measure}] * len(columns))
        lines += [
            f"### {measure} (x100)",
            "",
            "| model | " + " | ".join(columns) + " |",
            "|---|" + "---:|" * len(columns),
        ]
        for n in names:
            lines.append(f"| {n} | " + " | ".join(_shown(v, (n, c) in best) for c, v in zip(columns, rows[n])) + " |")
        lines += ["", *([BOLD_RULE, ""] if best else [])]
    first_stages = sorted({row["first_stage"] for row in subsets.values()})
    lines.append(
        f"First stage: {', '.join(first_stages)}; queries: "
        + ", ".join(f"{s} {row['queries']}" for s, row in subsets.items())
    )
    truncated = [
        f"{m} {s} {n}" for s, row in subsets.items() for m, n in row.get("truncated_documents", {}).items() if n
    ]
    if truncated:
        lines.append("Documents truncated to fit a model's context: " + ", ".join(truncated))
    return lines


COMPARISON_FIELDS = ("diff", "low", "high", "level", "p", "p_adjusted")


def _comparison_cells(found: Any) -> list[str]:
    """diff, low, high (x100), the interval's confidence level, p and p adjusted of one comparison; blanks when
    there is none."""
    if found is None:
        return [""] * len(COMPARISON_FIELDS)
    x100 = ["" if v is None else f"{v * 100:.3f}" for v in (found.diff, found.low, found.high)]
    level = "" if found.low is None else found.level
    return [*x100, level, f"{found.p:.6g}", "" if found.p_adjusted is None else f"{found.p_adjusted:.6g}"]


def quality_csv(quality: dict[str, Any], against: dict[tuple[str, str], Any] | None = None) -> str:
    """One row per dataset/subset and declared measure: baseline and every model (x100); with `against`
    ((model, "bench/subset") -> its comparison with the first stage), each model's difference, interval
    and p-values on the headline measure's row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    models = quality["models"]
    extra = [f"{m} {field}" for m in models for field in COMPARISON_FIELDS] if against is not None else []
    writer.writerow(["dataset", "subset", "group", "queries", "metric", "first_stage", "baseline", *models, *extra])
    for bench, subsets in quality["benchmarks"].items():
        for subset, row in subsets.items():
            for measure in row["measures"]:
                cells = [
                    bench,
                    subset,
                    row["group"],
                    row["queries"],
                    measure,
                    row["first_stage"],
                    pct(row["scores"][BASELINE][measure]),
                    *(pct(row["scores"][m][measure]) for m in models),
                ]
                if against is not None:
                    headline = measure == row["measure"]
                    for m in models:
                        cells += _comparison_cells(against.get((m, f"{bench}/{subset}")) if headline else None)
                writer.writerow(cells)
    return buffer.getvalue()

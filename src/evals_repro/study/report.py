"""`rerank-study report`: `report.md`, `quality.csv`, `comparisons.csv`, `latency-summary.json`, the figures
under `plots/` (PNG and SVG) and the self-contained `report.html`.

Quality (`quality_table`): per benchmark, the first-stage baseline and each model on the frozen
candidates, on the benchmark's declared measures; a subset score only when every query was
scored, a group score (its datasets weigh equally, each on its headline measure) only when every
dataset is complete, the overall score (the suite's groups weigh equally) only when every group is.
Latency: bootstrap summaries per model and benchmark, the repeat/first check, and a
pooled p50 only for a complete suite measured from one host location under one protocol.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..base.io import atomic_write_json, atomic_write_text, read_jsonl
from ..reporting.significance import DEFAULT_PERMUTATIONS, DEFAULT_SEED, check_permutations, check_seed
from .comparisons import StudyComparisons, StudyData, compare_study, comparisons_csv, comparisons_markdown, legend
from .costs import cost_markdown, study_costs
from .latency import LATENCY, PLAN
from .manifest import load_manifest
from .models import current_rows, reported_versions, unreported
from .quality_table import BASELINE, benchmark_markdown, quality_csv, quality_markdown, quality_scores
from .stats import Cluster, bootstrap_summary, repeat_diagnostic

__all__ = ["BASELINE", "latency_summary", "quality_scores", "render_markdown", "write_report"]


def latency_summary(study_dir: Path, resamples: int = 2000, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Per model and benchmark: coverage, bootstrap summaries and the repeat check, their draws seeded by
    `seed` (the report's, not the latency plan's sampling seed)."""
    study_dir = Path(study_dir)
    plan_path = study_dir / PLAN
    if not plan_path.exists():
        return {}
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    # a plugin's timings of one version only: that of its quality rows (else of its last timed call)
    timed = [r for r in read_jsonl(study_dir / LATENCY, damaged="skip") if r.get("status") == "ok"]
    versions = reported_versions(load_manifest(study_dir))
    records = current_rows(timed, versions)
    planned = {b: sum(len(q) for q in subsets.values()) * plan["repeats"] for b, subsets in plan["queries"].items()}
    per_model: dict[str, Any] = {}
    plugins = {r["model"]: r.get("plugin") for r in records}
    seen: dict[tuple, dict] = {}
    for r in records:  # the last ok record of a call wins (a rerun never duplicates, but be safe)
        seen[(r["model"], r["benchmark"], r["subset"], r["query_id"], r["repeat"])] = r
    grouped: dict[str, dict[str, dict[tuple[str, str], list]]] = defaultdict(lambda: defaultdict(dict))
    for (model, bench, subset, qid, _repeat), r in sorted(seen.items()):
        grouped[model][bench].setdefault((subset, qid), []).append(r)
    for model, benches in sorted(grouped.items()):
        entry: dict[str, Any] = {"benchmarks": {}}
        if plugins.get(model):
            entry["plugin"] = plugins[model]  # the plugin version these timings are of
        all_clusters: list[Cluster] = []
        locations: set[str | None] = set()
        complete = True
        for bench in sorted(plan["queries"]):
            calls = benches.get(bench, {})
            clusters = []
            retried = 0
            for (subset, qid), rs in sorted(calls.items()):
                rs = sorted(rs, key=lambda r: r["repeat"])
                retried += sum(1 for r in rs if r["retried"])
                locations.update(r.get("host_location") for r in rs)
                clusters.append(Cluster(subset, qid, tuple(r["latency_ms"] for r in rs if not r["retried"])))
            recorded = sum(len(rs) for rs in calls.values())
            complete &= recorded == planned[bench]
            all_clusters.extend(Cluster(f"{bench}/{c.subset}", c.query_id, c.latencies) for c in clusters)
            entry["benchmarks"][bench] = {
                "coverage": {"planned": planned[bench], "recorded": recorded, "retried_excluded": retried},
                "summary": bootstrap_summary(clusters, resamples=resamples, seed=seed),
                "repeat_check": repeat_diagnostic(clusters, resamples=resamples, seed=seed),
            }
        suite = complete and len(locations) == 1 and None not in locations
        entry["pooled"] = bootstrap_summary(all_clusters, resamples=resamples, seed=seed) if suite else None
        entry["pooled_note"] = (
            "complete suite from one host location"
            if suite
            else "no pooled figure: the suite is incomplete or lacks one declared host location (--host-location)"
        )
        given = sorted(x for x in locations if x is not None)
        entry["host_locations"] = given + (["(not given)"] if None in locations else [])
        per_model[model] = entry
    return {
        "plan": {k: plan[k] for k in ("samples", "repeats", "seed")},
        "bootstrap_seed": seed,
        "models": per_model,
        "not_reported": unreported(timed, versions, "timing(s)"),
    }


def _ms(stat: dict[str, float] | None) -> str:
    if not stat:
        return ""
    if "low" in stat and stat["low"] is None:  # one query per subset: nothing to resample
        return f"{stat['estimate']:.1f} [n/a: 1 query per subset]"
    if "low" in stat:
        return f"{stat['estimate']:.1f} [{stat['low']:.1f}, {stat['high']:.1f}]"
    return f"{stat['estimate']:.0f}"


def render_markdown(
    quality: dict[str, Any],
    latency: dict[str, Any],
    comparisons: StudyComparisons | None = None,
    costs: dict[str, Any] | None = None,
) -> str:
    lines = ["# Reranking study", "", *quality_markdown(quality, comparisons.marks() if comparisons else None)]
    if comparisons is not None:
        lines += ["", legend(comparisons), "", *comparisons_markdown(comparisons)]
    for bench in quality["benchmarks"]:
        lines += ["", f"## {bench}", "", *benchmark_markdown(quality, bench)]
        if latency:
            lines += [
                "",
                "### Latency (ms; 95% cluster-bootstrap intervals)",
                "",
                "| model | calls | mean | p50 | p90 | p95 | coverage | retried (excluded) |",
                "|---|---:|---:|---:|---:|---:|---:|---:|",
            ]
            for model, entry in latency["models"].items():
                b = entry["benchmarks"].get(bench)
                if not b:
                    continue
                s, c = b["summary"], b["coverage"]
                lines.append(
                    f"| {model} | {_ms(s.get('n_calls'))} | {_ms(s.get('mean'))} | {_ms(s.get('p50'))} | "
                    f"{_ms(s.get('p90'))} | {_ms(s.get('p95'))} | {c['recorded']}/{c['planned']} | "
                    f"{c['retried_excluded']} |"
                )
            lines += [
                "",
                "### Repeat check (median repeat/first ratio; below 0.90 flags a repeat speed-up)",
                "",
                "| model | pairs | first-pass median | repeat median | ratio [95% CI] | verdict |",
                "|---|---:|---:|---:|---:|---|",
            ]
            for model, entry in latency["models"].items():
                r = entry["benchmarks"].get(bench, {}).get("repeat_check")
                if not r:
                    continue
                ratio = f"{r['ratio']:.2f} [{r['low']:.2f}, {r['high']:.2f}]" if "ratio" in r else ""
                first = "" if r["first_median"] is None else f"{r['first_median']:.1f}"
                rep = "" if r["repeat_median"] is None else f"{r['repeat_median']:.1f}"
                lines.append(f"| {model} | {r['pairs']} | {first} | {rep} | {ratio} | {r['verdict']} |")
    if latency:
        lines += ["", "## Pooled latency", "", "| model | pooled p50 (ms) | note |", "|---|---:|---|"]
        for model, entry in latency["models"].items():
            pooled = entry["pooled"]
            lines.append(f"| {model} | {_ms(pooled['p50']) if pooled else ''} | {entry['pooled_note']} |")
        if latency.get("not_reported"):
            lines += ["", *(f"Latency: {line}." for line in latency["not_reported"])]
    lines += cost_markdown(costs or {})
    return "\n".join(lines) + "\n"


# A 95% percentile interval needs a draw in each 2.5% tail: 40 resamples at the very least.
MIN_RESAMPLES = 40


def check_resamples(resamples: int) -> int:
    """`--resamples`: a whole number of bootstrap draws, at least MIN_RESAMPLES; anything else is one UsageError."""
    from ..base.errors import UsageError

    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < MIN_RESAMPLES:
        raise UsageError(
            f"--resamples {resamples} is too few: a 95% bootstrap interval needs at least {MIN_RESAMPLES} draws",
            "use e.g. --resamples 2000 (the default)",
        )
    return resamples


def write_report(
    study_dir: Path, resamples: int = 2000, permutations: int = DEFAULT_PERMUTATIONS, seed: int = DEFAULT_SEED
) -> dict[str, Path]:
    check_resamples(resamples)
    check_permutations(permutations)
    check_seed(seed)
    study_dir = Path(study_dir)
    quality = quality_scores(study_dir)
    latency = latency_summary(study_dir, resamples=resamples, seed=seed)
    data = StudyData(quality, resamples=resamples, permutations=permutations, seed=seed)
    comparisons = compare_study(quality, data=data)
    paths = {
        "report": study_dir / "report.md",
        "quality": study_dir / "quality.csv",
        "comparisons": study_dir / "comparisons.csv",
        "latency": study_dir / "latency-summary.json",
        "html": study_dir / "report.html",
        "plots": study_dir / "plots",
    }
    markdown = render_markdown(quality, latency, comparisons, study_costs(study_dir))
    atomic_write_text(paths["report"], markdown)
    atomic_write_text(paths["quality"], quality_csv(quality, comparisons.against_first_stage()))
    atomic_write_text(paths["comparisons"], comparisons_csv(comparisons))
    atomic_write_json(paths["latency"], latency)
    from ..reporting.plots import close, save
    from .figures import study_figures
    from .html import study_html

    figures = study_figures(study_dir, data, latency)
    try:
        save(figures, paths["plots"])
        atomic_write_text(
            paths["html"], study_html(study_dir, markdown, figures, latency, resamples, permutations, seed)
        )
    finally:
        close(figures)
    return paths

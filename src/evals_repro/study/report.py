"""`rerank-study report`: `report.md`, `quality.csv` and `latency-summary.json`.

Quality: per benchmark, the first-stage baseline and each model on the frozen candidates; a
subset mean only when every query was scored, a benchmark mean (subsets weigh equally) only when
every subset is complete, the overall score (benchmark groups weigh equally) only when every
benchmark is. Latency: bootstrap summaries per model and benchmark, the repeat/first check, and a
pooled p50 only for a complete suite measured from one host location under one protocol.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..io import atomic_write_json, atomic_write_text, read_jsonl
from .latency import LATENCY, PLAN
from .quality import QUALITY, load_prepared
from .stats import Cluster, bootstrap_summary, repeat_diagnostic

STUDY_MEASURES = ("ndcg_at_10", "recall_at_10", "mrr_at_10", "map_at_100")
BASELINE = "first stage"


def _mean(values: list[float | None]) -> float | None:
    return None if not values or any(v is None for v in values) else sum(values) / len(values)  # type: ignore[arg-type]


def quality_scores(study_dir: Path) -> dict[str, Any]:
    """{benchmark: {subset: {"queries": n, "first_stage": name, "scores": {model: {measure: value|None}}}}}."""
    from .. import metrics as M

    manifest, items = load_prepared(study_dir)
    by_subset: dict[tuple[str, str], list] = defaultdict(list)
    for candidate, _ in items:
        by_subset[(candidate.benchmark, candidate.subset)].append(candidate)
    # (benchmark, subset) -> model -> request digest -> scores
    answers: dict[tuple[str, str], dict[str, dict[str, list[float]]]] = defaultdict(dict)
    for record in read_jsonl(Path(study_dir) / QUALITY):
        if record.get("status") == "ok":
            answers[(record["benchmark"], record["subset"])].setdefault(record["model"], {})[
                record["request_digest"]
            ] = record["scores"]
    models = sorted(manifest.get("models", {}))
    table: dict[str, Any] = {}
    for (bench, subset), candidates in sorted(by_subset.items()):
        qrels = {c.query_id: c.qrels for c in candidates}
        entry = manifest["datasets"][f"{bench}/{subset}"]
        runs = {BASELINE: {c.query_id: dict(zip(c.ids, c.scores)) for c in candidates}}
        for model in models:
            got = answers[(bench, subset)].get(model, {})
            if all(c.request_digest in got for c in candidates):
                runs[model] = {c.query_id: dict(zip(c.ids, got[c.request_digest])) for c in candidates}
        scores: dict[str, dict[str, float | None]] = {}
        for name in [BASELINE, *models]:
            if name in runs:
                scores[name] = dict(M.mean(M.evaluate(qrels, runs[name], STUDY_MEASURES)).items())
            else:
                scores[name] = {m: None for m in STUDY_MEASURES}
        table.setdefault(bench, {})[subset] = {
            "queries": len(candidates),
            "first_stage": entry["first_stage"],
            "scores": scores,
        }
    return {"models": models, "benchmarks": table}


def benchmark_means(quality: dict[str, Any], measure: str) -> dict[str, dict[str, float | None]]:
    names = [BASELINE, *quality["models"]]
    return {
        bench: {n: _mean([s["scores"][n][measure] for s in subsets.values()]) for n in names}
        for bench, subsets in quality["benchmarks"].items()
    }


def latency_summary(study_dir: Path, resamples: int = 2000) -> dict[str, Any]:
    study_dir = Path(study_dir)
    plan_path = study_dir / PLAN
    if not plan_path.exists():
        return {}
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    records = [r for r in read_jsonl(study_dir / LATENCY) if r.get("status") == "ok"]
    planned = {b: sum(len(q) for q in subsets.values()) * plan["repeats"] for b, subsets in plan["queries"].items()}
    per_model: dict[str, Any] = {}
    seen: dict[tuple, dict] = {}
    for r in records:  # the last ok record of a call wins (a rerun never duplicates, but be safe)
        seen[(r["model"], r["benchmark"], r["subset"], r["query_id"], r["repeat"])] = r
    grouped: dict[str, dict[str, dict[tuple[str, str], list]]] = defaultdict(lambda: defaultdict(dict))
    for (model, bench, subset, qid, _repeat), r in sorted(seen.items()):
        grouped[model][bench].setdefault((subset, qid), []).append(r)
    for model, benches in sorted(grouped.items()):
        entry: dict[str, Any] = {"benchmarks": {}}
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
                "summary": bootstrap_summary(clusters, resamples=resamples, seed=plan["seed"]),
                "repeat_check": repeat_diagnostic(clusters, resamples=resamples, seed=plan["seed"]),
            }
        suite = complete and len(locations) == 1 and None not in locations
        entry["pooled"] = bootstrap_summary(all_clusters, resamples=resamples, seed=plan["seed"]) if suite else None
        entry["pooled_note"] = (
            "complete suite from one host location"
            if suite
            else "no pooled figure: the suite is incomplete or lacks one declared host location (--host-location)"
        )
        entry["host_locations"] = sorted(str(x) for x in locations)
        per_model[model] = entry
    return {"plan": {k: plan[k] for k in ("samples", "repeats", "seed")}, "models": per_model}


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value * 100:.1f}"


def _ms(stat: dict[str, float] | None) -> str:
    if not stat:
        return ""
    if "low" in stat:
        return f"{stat['estimate']:.1f} [{stat['low']:.1f}, {stat['high']:.1f}]"
    return f"{stat['estimate']:.0f}"


def quality_csv(quality: dict[str, Any]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    models = quality["models"]
    writer.writerow(["dataset", "subset", "queries", "metric", "first_stage", "baseline", *models])
    for bench, subsets in quality["benchmarks"].items():
        for subset, row in subsets.items():
            for measure in STUDY_MEASURES:
                writer.writerow(
                    [
                        bench,
                        subset,
                        row["queries"],
                        measure,
                        row["first_stage"],
                        _pct(row["scores"][BASELINE][measure]),
                        *(_pct(row["scores"][m][measure]) for m in models),
                    ]
                )
    return buffer.getvalue()


def render_markdown(quality: dict[str, Any], latency: dict[str, Any]) -> str:
    models = quality["models"]
    names = [BASELINE, *models]
    lines = ["# Reranking study", ""]
    means = {m: benchmark_means(quality, m) for m in STUDY_MEASURES}
    overall = {n: _mean([means["ndcg_at_10"][b][n] for b in quality["benchmarks"]]) for n in names}
    lines += [
        "## Overall quality (nDCG@10 x100; benchmark groups weigh equally)",
        "",
        "| model | " + " | ".join(quality["benchmarks"]) + " | overall |",
        "|---|" + "---:|" * (len(quality["benchmarks"]) + 1),
    ]
    for n in names:
        cells = [_pct(means["ndcg_at_10"][b][n]) for b in quality["benchmarks"]]
        lines.append(f"| {n} | " + " | ".join(cells) + f" | {_pct(overall[n])} |")
    for bench, subsets in quality["benchmarks"].items():
        lines += ["", f"## {bench}", ""]
        for measure in STUDY_MEASURES:
            lines += [
                f"### {measure} (x100)",
                "",
                "| model | " + " | ".join(subsets) + " | mean |",
                "|---|" + "---:|" * (len(subsets) + 1),
            ]
            for n in names:
                cells = [_pct(row["scores"][n][measure]) for row in subsets.values()]
                lines.append(f"| {n} | " + " | ".join(cells) + f" | {_pct(means[measure][bench][n])} |")
            lines.append("")
        first_stages = sorted({row["first_stage"] for row in subsets.values()})
        lines.append(
            f"First stage: {', '.join(first_stages)}; queries: "
            + ", ".join(f"{s} {row['queries']}" for s, row in subsets.items())
        )
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
    return "\n".join(lines) + "\n"


def write_report(study_dir: Path, resamples: int = 2000) -> dict[str, Path]:
    study_dir = Path(study_dir)
    quality = quality_scores(study_dir)
    latency = latency_summary(study_dir, resamples=resamples)
    paths = {
        "report": study_dir / "report.md",
        "quality": study_dir / "quality.csv",
        "latency": study_dir / "latency-summary.json",
    }
    atomic_write_text(paths["report"], render_markdown(quality, latency))
    atomic_write_text(paths["quality"], quality_csv(quality))
    atomic_write_json(paths["latency"], latency)
    return paths

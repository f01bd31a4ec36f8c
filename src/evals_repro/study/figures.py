"""The study's figures: quality against p50 latency (both intervals, the Pareto front), latency ECDFs per
model, and per-dataset quality bars, per benchmark (and overall when the suite's pooled latency exists).

Quality intervals come from `StudyData` (queries resampled within each dataset, as the comparisons);
latency intervals from the latency summary (calls resampled by query within each subset).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from ..base.io import read_jsonl
from ..reporting.plots import Figure, Point, bars, ecdf, slug, tradeoff
from .comparisons import StudyData
from .latency import LATENCY
from .manifest import load_manifest
from .models import current_rows, reported_versions
from .quality_table import BASELINE


def latency_values(study_dir: Path) -> dict[str, dict[str, list[float]]]:
    """benchmark -> model -> every successful, not retried timed call's latency (ms); the last record of a call wins.
    A plugin reranker's calls of the version the latency summary reads (its quality's), as the tables."""
    seen: dict[tuple, dict] = {}
    timed = [r for r in read_jsonl(Path(study_dir) / LATENCY) if r.get("status") == "ok"]
    for r in current_rows(timed, reported_versions(load_manifest(study_dir))):
        if not r.get("retried") and r.get("latency_ms") is not None:
            seen[(r["model"], r["benchmark"], r["subset"], r["query_id"], r["repeat"])] = r
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (model, bench, *_), r in sorted(seen.items()):
        out[bench][model].append(float(r["latency_ms"]))
    return out


def _x100(found: tuple[float, float | None, float | None] | None):
    if found is None:
        return None
    estimate, low, high = found
    return estimate * 100, None if low is None else low * 100, None if high is None else high * 100


def _points(data: StudyData, weights: dict[int, float] | None, p50: dict[str, dict[str, Any] | None]) -> list[Point]:
    points = []
    for model in data.quality["models"]:
        quality, latency = _x100(data.interval(weights, model)), p50.get(model)
        if quality is None or not latency:
            continue
        points.append(
            Point(
                model, latency["estimate"], latency.get("low"), latency.get("high"), quality[0], quality[1], quality[2]
            )
        )
    return points


def study_figures(study_dir: Path, data: StudyData, latency: dict[str, Any]) -> list[Figure]:
    figures: list[Figure] = []
    models = latency.get("models", {}) if latency else {}
    values = latency_values(study_dir) if latency else {}
    for bench, keys in data.benches.items():
        measures = sorted({data.measure_of[k] for k in keys if k in data.measure_of})
        if not measures:
            continue
        label = f"{', '.join(measures)} (x100)"
        subsets = [k.split("/", 1)[1] for k in keys]
        series = [(n, [_x100(data.interval(data.weights([k]), n)) for k in keys]) for n in data.names]
        figures.append(
            bars(
                f"{slug(bench)}-quality",
                f"{bench}: quality per dataset, 95% cluster bootstrap intervals",
                subsets,
                series,
                label,
            )
        )
        p50 = {m: (e["benchmarks"].get(bench) or {}).get("summary", {}).get("p50") for m, e in models.items()}
        points = _points(data, data.weights(keys), p50)
        if points:
            reference = _x100(data.interval(data.weights(keys), BASELINE))
            figures.append(
                tradeoff(
                    f"{slug(bench)}-quality-latency",
                    f"{bench}: quality against p50 latency (95% intervals; dashed: Pareto front)",
                    points,
                    "p50 latency per call (ms)",
                    f"mean {label}",
                    reference[0] if reference else None,
                )
            )
        if values.get(bench):
            figures.append(
                ecdf(
                    f"{slug(bench)}-latency-ecdf",
                    f"{bench}: latency of every timed call",
                    sorted(values[bench].items()),
                    "latency per call (ms)",
                )
            )
    pooled = {m: (e.get("pooled") or {}).get("p50") for m, e in models.items()}
    points = _points(data, data.overall_weights(), pooled)
    if points:
        reference = _x100(data.interval(data.overall_weights(), BASELINE))
        figures.append(
            tradeoff(
                "overall-quality-latency",
                "Overall quality (groups weigh the same) against pooled p50 latency",
                points,
                "pooled p50 latency per call (ms)",
                "overall quality (x100)",
                reference[0] if reference else None,
            )
        )
    return figures

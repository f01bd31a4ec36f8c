"""The study's `report.html`: report.md's tables and comparisons, the figures inline, protocol and provenance
(datasets with their revisions and digests, models, sessions with dates, package versions, what was spent)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from ..base.io import read_jsonl
from ..reporting.html_report import grid_table, key_value_table, page
from ..reporting.plots import Figure
from .latency import LATENCY, WARMUP
from .manifest import load_manifest
from .models import SPENT_FIELDS
from .quality import QUALITY


def spent(study_dir: Path) -> dict[str, dict[str, float]]:
    """model -> requests and their costs, over every recorded request (quality, timed and warm-up calls)."""
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for name in (QUALITY, LATENCY, WARMUP):
        for record in read_jsonl(Path(study_dir) / name):
            model = str(record.get("model"))
            totals[model]["requests"] += 1
            for key in SPENT_FIELDS:
                totals[model][key] += float(record.get(key) or 0)
    return totals


def study_html(
    study_dir: Path,
    markdown: str,
    figures: list[Figure],
    latency: dict[str, Any],
    resamples: int,
    permutations: int,
    seed: int,
) -> str:
    manifest = load_manifest(study_dir) or {}
    plan = latency.get("plan", {}) if latency else {}
    protocol = [
        ("quality settings", manifest.get("quality_settings", {})),
        ("latency plan (samples, repeats, seed)", plan or "no latency measured"),
        ("bootstrap resamples", resamples),
        ("randomization permutations", permutations),
        ("bootstrap and randomization seed", seed),
        (
            "comparisons",
            "headline measure; randomization test (two-sided) and t-test; Holm-Bonferroni over the study; intervals: "
            "the randomization test inverted at the level Holm tested each comparison at",
        ),
        ("host", manifest.get("host", {})),
    ]
    datasets = grid_table(
        ["dataset", "first stage", "revision", "data digest", "candidates digest", "queries"],
        [
            (
                key,
                entry.get("first_stage", ""),
                entry.get("revision") or "",
                entry.get("data_digest", ""),
                entry.get("candidates_digest", ""),
                len(entry.get("query_ids", [])),
            )
            for key, entry in sorted(manifest.get("datasets", {}).items())
        ],
    )
    models = grid_table(
        ["model", "configuration"], [(m, config) for m, config in sorted(manifest.get("models", {}).items())]
    )
    sessions = grid_table(
        ["command", "started", "finished", "status"],
        [
            (s.get("command", ""), s.get("started", ""), s.get("finished") or "", s.get("status", ""))
            for s in manifest.get("sessions", [])
        ],
    )
    costs = spent(study_dir)
    spend = grid_table(
        ["model", "requests", *SPENT_FIELDS],
        [(m, f"{c['requests']:g}", *(f"{c[k]:g}" for k in SPENT_FIELDS)) for m, c in sorted(costs.items())],
    )
    versions = manifest.get("versions")
    sections = [
        ("Protocol", key_value_table(protocol)),
        ("Datasets", datasets),
        ("Models", models),
        ("Sessions", sessions),
        ("Spend", spend),
    ]
    if isinstance(versions, dict) and versions:
        sections.append(("Package versions recorded by the study", key_value_table(sorted(versions.items()))))
    return page("Reranking study", markdown, figures, sections)

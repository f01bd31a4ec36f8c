"""The results side of `evals-repro answer`: accuracy from judged rows, the easy/hard split, the paper's
answer table, and every answer result under an output folder (`answer-report`).

A row is one query and generator with its verdict (correct, incorrect, unparsed = incorrect, or
missing); accuracy is over the judged rows, micro overall and per domain, plus the mean of the domain
accuracies (macro), which the table shows as "all (mean of domains)".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..base.errors import UsageError
from ..base.io import atomic_write_json, read_jsonl
from ..metrics.protocol import running_mean
from . import labels as L
from .annotations import PaperSubset
from .answer_request import PANEL_DIR
from .llm import ModelSpec


def accuracy(rows: list[dict[str, Any]], domains: list[str]) -> dict[str, Any]:
    """Micro accuracy over judged queries, per domain, and the mean of the domain accuracies (macro)."""

    def block(subset_rows: list[dict[str, Any]]) -> dict[str, Any]:
        judged = [r for r in subset_rows if r["verdict"] != "missing"]
        correct = sum(r["correct"] for r in judged)
        return {
            "n": len(judged),
            "correct": correct,
            "accuracy": correct / len(judged) if judged else None,
            "missing": len(subset_rows) - len(judged),
        }

    per_domain = {d: block([r for r in rows if r["subset"] == d]) for d in domains}
    scored = [b["accuracy"] for b in per_domain.values() if b["accuracy"] is not None]
    return {
        "overall": block(rows),
        "macro": running_mean(scored) if scored else None,
        "domains": per_domain,
    }


def pipeline_scores(
    result: dict[str, Any],
    rows: list[dict[str, Any]],
    labels: Path | None,
    out_dir: Path,
    papers: list[PaperSubset],
) -> None:
    """A pipeline run's accuracy, overall and on the easy/hard split of the panel's labels (`labels`,
    default `<out_dir>/easy-hard/labels.json`), and its per-query verdicts, into `result`."""
    domains = [p.name for p in papers]
    path = Path(labels) if labels else Path(out_dir) / PANEL_DIR / L.LABELS
    stored = L.load_labels(path)
    by_key = (stored or {}).get("labels", {})
    for row in rows:
        row["label"] = (by_key.get(row["key"]) or {}).get("label")
    result["accuracy"] = {"all": accuracy(rows, domains)}
    if stored is None:
        result["labels"] = {
            "source": str(path),
            "note": "no easy/hard labels: build them once with `evals-repro answer --no-context --models ...`",
        }
    else:
        result["labels"] = {
            "source": str(path),
            "sha256": L.file_digest(path),
            "panel": stored.get("panel"),
            "judge": stored.get("judge"),
            "counts": L.counts({r["key"]: {"label": r["label"]} for r in rows}),
        }
        for label in ("easy", "hard"):
            result["accuracy"][label] = accuracy([r for r in rows if r["label"] == label], domains)
    result["queries"] = [[r["key"], r["verdict"], r.get("label")] for r in rows]


def panel_scores(
    result: dict[str, Any], rows: list[dict[str, Any]], generators: list[ModelSpec], run_dir: Path, papers
) -> None:
    """The no-context panel: each model's accuracy into `result`, and the easy/hard labels its verdicts
    define, written to `<run_dir>/labels.json`."""

    domains = [p.name for p in papers]
    panel = [g.name for g in generators]
    keys = [L.query_key(p.name, q.id) for p in papers for q in p.queries]
    labels = L.labels_from_verdicts(read_jsonl(run_dir / "verdicts.jsonl", damaged="skip"), panel, keys)
    stored = {
        "panel": panel,
        "judge": result["config"]["judge"],
        "prompts": result["config"]["prompts"],
        "counts": L.counts(labels),
        "labels": labels,
    }
    atomic_write_json(run_dir / L.LABELS, stored)
    result["labels"] = {"path": str(run_dir / L.LABELS), "panel": panel, "counts": stored["counts"]}
    result["accuracy"] = {m: accuracy([r for r in rows if r["generator"] == m], domains) for m in panel}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}"


def answer_table(results: list[dict[str, Any]]) -> str:
    """Markdown, accuracy x100: one row per run (or panel model), domains then hard / easy / all (macro)."""
    domains: list[str] = []
    for result in results:
        for name in result.get("datasets", {}):
            if name not in domains:
                domains.append(name)
    lines = [
        "| run | " + " | ".join(domains) + " | hard | easy | all (mean of domains) | all (pooled) |",
        "|---|" + "---:|" * (len(domains) + 4),
    ]
    for result in results:
        if result["kind"] == "answer-panel":
            blocks = [(f"no context: {m}", acc, None) for m, acc in result["accuracy"].items()]
        else:
            acc = result["accuracy"]
            blocks = [(result["run"], acc["all"], acc)]
        for label, block, split in blocks:
            cells = [_pct(block["domains"].get(d, {}).get("accuracy")) for d in domains]
            hard = _pct(split["hard"]["macro"]) if split and "hard" in split else "-"
            easy = _pct(split["easy"]["macro"]) if split and "easy" in split else "-"
            lines.append(
                f"| {label} | "
                + " | ".join(cells)
                + f" | {hard} | {easy} | {_pct(block['macro'])} | {_pct(block['overall']['accuracy'])} |"
            )
    return "\n".join(lines) + "\n"


def collect_results(out_dir: Path) -> list[dict[str, Any]]:
    """Every answer result under `out_dir` (the panel first, then pipeline runs by name)."""
    found = []
    panel = Path(out_dir) / PANEL_DIR / "result.json"
    if panel.exists():
        found.append(json.loads(panel.read_text(encoding="utf-8")))
    for path in sorted((Path(out_dir) / "answer").glob("*/result.json")):
        found.append(json.loads(path.read_text(encoding="utf-8")))
    if not found:
        raise UsageError(f"no answer results under {out_dir}", "run `evals-repro answer ...` first")
    return found

"""Easy and hard queries: a query is easy when any model of a panel answers it correctly with no context.

The label is a pure function of the stored verdicts (`verdicts.jsonl` of the no-context panel run), so
`labels.json` can always be rebuilt from them: per query, the panel models with a verdict and those
judged correct. A query with a correct verdict is easy; one judged for every panel model and never
correct is hard; anything else (a panel call failed) is unlabelled until the panel run is completed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..base.errors import UsageError
from ..base.io import read_jsonl

LABELS = "labels.json"


def query_key(subset: str, query_id: str) -> str:
    return f"{subset}/{query_id}"


def labels_from_verdicts(
    verdicts: list[dict[str, Any]], panel: list[str], queries: list[str]
) -> dict[str, dict[str, Any]]:
    """query key -> {"label": "easy"|"hard"|None, "correct": [models], "judged": [models]}.

    Only ok verdicts on answers of panel models count; a later verdict for the same query and model
    replaces an earlier one (records are appended in the order they were made).
    """
    latest: dict[tuple[str, str], bool] = {}
    for record in verdicts:
        if record.get("status") != "ok" or record.get("generator") not in panel:
            continue
        latest[(record["query_key"], record["generator"])] = bool(record.get("correct"))
    labels: dict[str, dict[str, Any]] = {}
    for key in queries:
        judged = [m for m in panel if (key, m) in latest]
        correct = [m for m in judged if latest[(key, m)]]
        label = "easy" if correct else ("hard" if len(judged) == len(panel) else None)
        labels[key] = {"label": label, "correct": correct, "judged": judged}
    return labels


def counts(labels: dict[str, dict[str, Any]]) -> dict[str, int]:
    out = {"easy": 0, "hard": 0, "unlabelled": 0}
    for entry in labels.values():
        out[entry["label"] or "unlabelled"] += 1
    return out


def file_digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if Path(path).exists() else ""


def load_labels(path: Path) -> dict[str, Any] | None:
    """The stored labels, or None when the panel was never run."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise UsageError(f"{path} is not valid JSON", "rebuild it: rerun `evals-repro answer --no-context`") from None
    return stored


def rebuild_labels(panel_dir: Path, panel: list[str], queries: list[str]) -> dict[str, dict[str, Any]]:
    """Labels recomputed from a panel directory's stored verdicts alone."""
    return labels_from_verdicts(read_jsonl(Path(panel_dir) / "verdicts.jsonl", damaged="skip"), panel, queries)

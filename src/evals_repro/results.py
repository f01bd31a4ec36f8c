"""Result files: `results/<benchmark>/<method>/<subset>.json`, one per subset, written atomically.

A file is complete when it parses and carries `"complete": true` with metrics for every
language it claims; anything else (a stray temp file, a hand-edited stub) is not complete and
`--resume` recomputes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .io import atomic_write_json

SCHEMA_VERSION = 1


def method_label(method_label: str, content: str) -> str:
    """The folder name of a method's results: the method, plus `[images]` for page-image runs."""
    return method_label if content == "markdown" else f"{method_label}[{content}]"


def result_path(results_dir: Path, benchmark: str, label: str, subset: str) -> Path:
    return Path(results_dir) / benchmark / label / f"{subset}.json"


def write_result(path: Path, result: dict[str, Any]) -> None:
    result = dict(result)
    result["schema"] = SCHEMA_VERSION
    result["complete"] = True
    atomic_write_json(path, result)


def read_result(path: Path) -> dict[str, Any] | None:
    """The result at `path` if it is complete, else None (missing, torn, or incomplete)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("complete") is not True:
        return None
    languages = data.get("languages")
    if not isinstance(languages, dict) or not languages or not isinstance(data.get("metrics"), dict):
        return None
    if any(not isinstance(v, dict) or "metrics" not in v for v in languages.values()):
        return None
    return data


@dataclass(frozen=True)
class StoredResult:
    path: Path
    data: dict[str, Any]

    @property
    def method(self) -> str:
        return self.data["method"]

    @property
    def subset(self) -> str:
        return self.data["subset"]


def scan_results(results_dir: Path, benchmark: str) -> list[StoredResult]:
    """Every complete result file of a benchmark, in a stable order."""
    root = Path(results_dir) / benchmark
    found = []
    for path in sorted(root.glob("*/*.json")):
        data = read_result(path)
        if data is not None:
            found.append(StoredResult(path, data))
    return found

"""What `reproduce --run` computed, kept on disk: `<results-dir>/reproduce/<source>.json`.

A later `reproduce` without `--run` reads it (and the user's own result records) instead of recomputing. The file
names the data revision it was computed from; one of another revision is named and never compared.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import DataError
from ..base.io import atomic_write_json

VERSION = 1


@dataclass
class Stored:
    source: str
    revision: str | None
    values: dict[str, float] = field(default_factory=dict)  # figure id (or table cell id) -> value in its unit
    unavailable: dict[str, str] = field(default_factory=dict)  # figure id -> what computing it lacked
    created: str = ""
    versions: dict[str, str] = field(default_factory=dict)


def store_path(results_dir: Path, source: str) -> Path:
    return Path(results_dir) / "reproduce" / f"{source}.json"


def save(results_dir: Path, stored: Stored) -> Path:
    from importlib.metadata import version

    path = store_path(results_dir, stored.source)
    stored.created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    stored.versions = {name: version(name) for name in ("evals-repro", "pyarrow", "numpy")}
    values = {k: v for k, v in stored.values.items() if math.isfinite(v)}
    atomic_write_json(
        path,
        {
            "version": VERSION,
            "source": stored.source,
            "revision": stored.revision,
            "created": stored.created,
            "versions": stored.versions,
            "values": values,
            "unavailable": stored.unavailable,
        },
    )
    return path


def load(results_dir: Path, source: str, revision: str | None, tag: str | None = None) -> Stored | None:
    """The stored computation of a source; None if there is none. Another data revision is refused (exit 2)."""
    path = store_path(results_dir, source)
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        values = {str(k): float(v) for k, v in raw["values"].items()}
        unavailable = {str(k): str(v) for k, v in raw.get("unavailable", {}).items()}
        stored = Stored(raw["source"], raw.get("revision"), values, unavailable, str(raw.get("created", "")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataError(
            f"{path}: not a readable reproduce result ({type(exc).__name__}: {exc})",
            f"delete it and rerun `evals-repro reproduce {source} --run`",
        ) from None
    if stored.source != source:
        raise DataError(f"{path}: holds source '{stored.source}', not '{source}'", "delete it and rerun with --run")
    if revision is not None and stored.revision != revision:
        raise DataError(
            f"{path}: computed from data revision {stored.revision}, not the {source} figures' {revision}"
            + (f" ({tag})" if tag else "")
            + ": never compared",
            f"rerun `evals-repro reproduce {source} --run` (it replaces the file), or move it out of the results folder",
        )
    return stored

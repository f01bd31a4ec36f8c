"""A run directory: one writer at a time (base/locks.py), a manifest that refuses mixed inputs.

`manifest.json` holds the run's configuration (models, prompts and their digests, pipeline) and,
per domain, the dataset it was computed on; a resumed run must match both, otherwise it stops and
asks for another run name. Every command that writes is recorded in the manifest's sessions.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..base.errors import UsageError
from ..base.io import atomic_write_json
from ..base.locks import study_writer
from ..study.manifest import MANIFEST, recorded_session


def _load(run_dir: Path) -> dict[str, Any]:
    path = run_dir / MANIFEST
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise UsageError(f"{path} is not valid JSON", "restore it, or pick a new --run-name") from None


def same_or_refuse(run_dir: Path, what: str, stored: Any, current: Any) -> None:
    if stored is not None and stored != current:
        raise UsageError(
            f"{run_dir / MANIFEST}: {what} changed since this run started",
            "pick a new --run-name or --out-dir (results from different inputs must not mix)",
        )


@contextlib.contextmanager
def run_directory(
    run_dir: Path, config: dict[str, Any], echo: Callable[[str], None]
) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
    """Lock `run_dir`, check its configuration, record the session; yields (manifest, outcome)."""
    run_dir = Path(run_dir)
    with study_writer(run_dir, echo, what="run directory", option="--out-dir") as command:
        manifest = _load(run_dir)
        same_or_refuse(run_dir, "the configuration", manifest.get("config"), config)
        manifest["config"] = config
        manifest.setdefault("datasets", {})
        with recorded_session(run_dir, manifest, command) as outcome:
            yield manifest, outcome


def record_dataset(run_dir: Path, manifest: dict[str, Any], name: str, identity: dict[str, Any]) -> None:
    same_or_refuse(Path(run_dir), f"the dataset of {name}", manifest["datasets"].get(name), identity)
    manifest["datasets"][name] = identity
    atomic_write_json(Path(run_dir) / MANIFEST, manifest)

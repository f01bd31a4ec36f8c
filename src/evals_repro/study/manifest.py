"""`manifest.json`: what a study directory was computed on, and every session that wrote to it.

A directory is reused only when its datasets, candidates and protocol settings are unchanged;
otherwise the study stops and asks for a new `--study-dir`, so results from different inputs
never mix.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..base.errors import UsageError
from ..base.io import atomic_write_json

MANIFEST = "manifest.json"
PROTOCOL_VERSION = 1


def host_description(location: str | None = None) -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "location": location,
    }


def load_manifest(study_dir: Path) -> dict[str, Any] | None:
    path = Path(study_dir) / MANIFEST
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise UsageError(f"{path} is not valid JSON", "restore it or pick a new --study-dir") from None


def save_manifest(study_dir: Path, manifest: dict[str, Any]) -> None:
    atomic_write_json(Path(study_dir) / MANIFEST, manifest)


def require_same(study_dir: Path, what: str, stored: Any, current: Any) -> None:
    """Refuse to mix: a changed dataset, candidate set or protocol setting needs a new directory."""
    if stored is not None and stored != current:
        raise UsageError(
            f"{Path(study_dir) / MANIFEST}: {what} changed since this study was prepared",
            "pick a new --study-dir (results from different inputs must not mix)",
        )


def start_session(manifest: dict[str, Any], command: str) -> dict[str, Any]:
    session = {"command": command, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "finished": None}
    manifest.setdefault("sessions", []).append(session)
    return session


def finish_session(session: dict[str, Any], status: str) -> None:
    session["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    session["status"] = status


@contextlib.contextmanager
def recorded_session(study_dir: Path, manifest: dict[str, Any], command: str) -> Iterator[dict[str, str]]:
    """Record one command in the manifest's sessions: `failed` unless the block sets `outcome["status"]`."""
    session = start_session(manifest, command)
    save_manifest(study_dir, manifest)
    outcome = {"status": "failed"}
    try:
        yield outcome
    finally:
        finish_session(session, outcome["status"])
        save_manifest(study_dir, manifest)

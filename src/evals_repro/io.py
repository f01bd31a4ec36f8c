"""Crash-safe file writing: temp file + rename, whole directories built aside and renamed into place, and
append-only JSONL flushed per record.

A killed process leaves either the old file or the new one, never a torn one; a torn final
JSONL line (killed mid-write) is dropped and truncated away on the next open. A new file gets the
mode `open()` would give it (0o666 minus the umask), not mkstemp's private 0o600; a replaced file
keeps its mode.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:  # elsewhere the only way to read it is to set it (briefly) and put it back
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _target_mode(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~current_umask()


def _check_directory(path: Path, named: str) -> None:
    from .errors import UsageError

    blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        where = "it is a file" if blocker == path else f"{blocker} is a file"
        raise UsageError(
            f"{named} cannot be used as a directory: {where}", "move that file away or choose another path"
        )


def ensure_directories(*paths: tuple[Path, str]) -> None:
    """`ensure_directory` for several (path, option) pairs, all checked before any is created."""
    for path, option in paths:
        _check_directory(Path(path), f"{option} {path}")
    for path, option in paths:
        ensure_directory(path, option)


def ensure_directory(path: Path, option: str | None = None) -> Path:
    """Create `path` (and its parents) or say in one line why it cannot be a directory and what to do.

    Called before any work is paid for, so a bad --results-dir or --cache-dir costs nothing."""
    from .errors import UsageError

    path = Path(path)
    named = f"{option} {path}" if option else str(path)
    _check_directory(path, named)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"{named} cannot be created ({exc.strerror or type(exc).__name__})",
            "choose a path you can write to, or fix its permissions",
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{named} is not writable", "choose a path you can write to, or fix its permissions")
    return path


def check_output_file(path: Path, option: str) -> Path:
    """Refuse, in one line naming the option, an output file that cannot be written: a directory, or a
    parent that is a file. Called before the work, so a typo in `-o` costs nothing."""
    from .errors import UsageError

    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{option} {path} is a directory", "give a file name, e.g. tables.md inside it")
    blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise UsageError(f"{option} {path}: {blocker} is a file, not a folder", "choose another path")
    return path


def write_output_text(path: Path, text: str, option: str) -> None:
    """`atomic_write_text` for a file the user named with `option`: an OS refusal (no permission, read-only
    disk, full disk) is one line naming the option and the path, not a traceback."""
    from .errors import UsageError

    check_output_file(path, option)
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise UsageError(
            f"{option} {path} cannot be written ({exc.strerror or type(exc).__name__})",
            "choose a path you can write to, or fix its permissions",
        ) from None


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _target_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=1, ensure_ascii=False, sort_keys=False) + "\n")


def staging_directory(target: Path) -> Path:
    """A fresh hidden sibling of `target` to build a directory in (then `replace_directory`)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))


def replace_directory(staging: Path, target: Path) -> None:
    """Rename a finished `staging` directory to `target`. What is there (an incomplete or damaged build) is
    renamed aside first, then removed. If another process put its build there first (the rename fails),
    ours is dropped: both were built for the same key, so theirs is equivalent."""
    if target.exists():
        discard = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
        os.replace(target, discard / "old")
        shutil.rmtree(discard, ignore_errors=True)
    try:
        os.replace(staging, target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)


def read_jsonl(path: Path, *, repair: bool = False) -> list[dict]:
    """Read the records of a JSONL file; a torn last line is dropped (and cut off if `repair`).

    Only the final line may be torn (a kill mid-write); a bad line before it is real damage.
    """
    from .errors import DataError

    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    records: list[dict] = []
    offset = 0
    while offset < len(data):
        newline = data.find(b"\n", offset)
        terminated = newline != -1
        end = newline if terminated else len(data)
        line = data[offset:end]
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                if terminated and data[end + 1 :].strip():
                    raise DataError(
                        f"{path}: line {data[:offset].count(b'\n') + 1} is not valid JSON",
                        "the file is damaged before its last line; move it away and rerun",
                    ) from None
                if repair:
                    with open(path, "r+b") as handle:
                        handle.truncate(offset)
                return records
        if not terminated and repair:
            with open(path, "ab") as handle:
                handle.write(b"\n")
        offset = end + 1
    return records


class JsonlAppender:
    """Append records to a JSONL file, one flush + fsync per record."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        read_jsonl(self.path, repair=True)
        self._handle = open(self.path, "ab")

    def append(self, record: dict) -> None:
        self._handle.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def jsonable(value: Any) -> Any:
    """`value` as plain JSON data: numpy scalars and arrays as numbers and lists, anything else unknown as its str
    (what a plugin's `describe()` may hold, recorded in result files)."""

    def plain(item: Any) -> Any:
        tolist = getattr(item, "tolist", None)
        return tolist() if callable(tolist) else str(item)

    return json.loads(json.dumps(value, default=plain))

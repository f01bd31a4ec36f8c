"""Crash-safe file writing: temp file + rename, groups of files written as one unit, whole directories built
aside and renamed into place, and append-only JSONL flushed per record.

A killed process leaves either the old file or the new one, never a torn one; a torn final
JSONL line (killed mid-write) is dropped and truncated away on the next open. A new file gets the
mode `open()` would give it (0o666 minus the umask), not mkstemp's private 0o600; a replaced file
keeps its mode.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any

_UMASK_LOCK = threading.Lock()
log = logging.getLogger(__name__)


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


def check_directories(*paths: tuple[Path, str]) -> None:
    """Refuse, in one line naming the option, a directory that could not be created or written, creating nothing:
    a command checks its folders with its other options and makes them only once nothing is left to refuse."""
    from .errors import UsageError

    for path, option in paths:
        path = Path(path)
        named = f"{option} {path}"
        _check_directory(path, named)
        existing = next((p for p in (path, *path.parents) if p.exists()), None)
        if existing is None or os.access(existing, os.W_OK | os.X_OK):
            continue
        if existing == path:
            raise UsageError(f"{named} is not writable", "choose a path you can write to, or fix its permissions")
        raise UsageError(
            f"{named} cannot be created ({os.strerror(errno.EACCES)})",
            "choose a path you can write to, or fix its permissions",
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
        if exc.errno in DISK_REFUSALS:  # a full or read-only disk: what to free, or where else to write
            raise write_error(path, exc, len(text.encode("utf-8")), option) from None
        raise UsageError(
            f"{option} {path} cannot be written ({exc.strerror or type(exc).__name__})",
            "choose a path you can write to, or fix its permissions",
        ) from None


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _staged(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise


def _staged(path: Path, data: bytes) -> Path:
    """`data` in a hidden temp file beside `path`, flushed to disk; the temp file is gone again if this fails."""
    mode = _target_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        _unlink(Path(tmp))
        raise
    return Path(tmp)


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _sync_directory(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_unit(files: list[tuple[Path, bytes | None]], option: str = "--results-dir") -> None:
    """Write files that belong together (a result and its saved run, judgments, gains) as one unit.

    Every file is first written whole under a hidden temp name beside its target; only when all are on
    disk are they renamed into place, the last one (the file that points to the others) last, after the
    old last one was removed: a reader that finds the last file finds the others it names. A failure
    before the renames (a full disk) removes the temp files and leaves the old unit as it was. `None`
    removes a file the new unit no longer has. An OS refusal is a WriteError naming the file and what
    to free (`option` is where the user chose the folder).
    """
    staged: list[tuple[Path, Path]] = []
    path = files[0][0]
    try:
        for path, data in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            if data is not None:
                staged.append((_staged(path, data), path))
    except OSError as exc:
        for tmp, _ in staged:
            _unlink(tmp)
        raise write_error(path, exc, sum(len(d) for _, d in files if d is not None), option) from None
    except BaseException:
        for tmp, _ in staged:
            _unlink(tmp)
        raise
    last = files[-1][0]
    _unlink(last)  # from here until its rename, the unit has no last file: it reads as not written
    for tmp, target in staged:
        os.replace(tmp, target)
    for target, data in files:
        if data is None:
            _unlink(target)
    for folder in {target.parent for target, _ in files}:
        _sync_directory(folder)


# errno values that say the disk itself refused (space, quota, size limit); with EROFS, every later write fails too
_DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
DISK_REFUSALS = frozenset({*_DISK_FULL, errno.EROFS})


def write_error(path: Path, exc: OSError, needed: int | None = None, option: str | None = "--results-dir"):
    """The one line for an OS refusal while writing `path`: the file, why, and what to free or change
    (`option`: the option that chose its folder, None when none did)."""
    from .errors import WriteError

    reason = exc.strerror or type(exc).__name__
    folder = Path(path) if Path(path).is_dir() else Path(path).parent
    elsewhere = f", or point {option} at another disk" if option else ""
    if exc.errno in _DISK_FULL:
        try:
            free = f", {human_bytes(shutil.disk_usage(folder).free)} free there"
        except OSError:
            free = ""
        what = (
            "the file size limit (ulimit -f) is below it"
            if exc.errno == errno.EFBIG
            else f"free {f'at least {human_bytes(needed)}' if needed else 'space'} on the disk holding {folder}{free}"
        )
        hint = f"{what}{elsewhere}, then rerun (what was finished is kept)"
    elif exc.errno == errno.EROFS:
        hint = f"{folder} is on a read-only disk: " + (
            f"point {option} at a writable one, then rerun" if option else "remount it writable, then rerun"
        )
    else:
        hint = f"fix the permissions of {folder}{elsewhere}, then rerun (what was finished is kept)"
    return WriteError(f"cannot write {path} ({reason})", hint)


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{int(size)} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"


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


def damaged_path(path: Path) -> Path:
    """The side file a JSONL file's damaged lines are set aside in (`quality.jsonl.damaged`)."""
    return Path(path).with_name(Path(path).name + ".damaged")


def read_jsonl(path: Path, *, repair: bool = False, damaged: str = "raise") -> list[dict]:
    """Read the records of a JSONL file; a torn last line is dropped (and cut off if `repair`).

    Only the final line may be torn (a kill mid-write); a bad line before it (not JSON, not an object) is
    real damage, handled by `damaged`: "raise" (a DataError naming the line: for files whose every line is
    needed, such as frozen candidates), "skip" (a reader: left out, with a warning) or "set-aside" (the file's
    writer, under its lock: the line is moved to `<file>.damaged` and the file rewritten without it, with a
    warning; every good record is kept, and what the line recorded is redone as if never done).
    """
    from .errors import DataError

    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    records: list[dict] = []
    good: list[tuple[int, int]] = []  # (start, end) of the records' lines
    bad: list[tuple[int, int, int]] = []  # (line number, start, end) of damaged lines before the last
    offset = 0
    while offset < len(data):
        newline = data.find(b"\n", offset)
        terminated = newline != -1
        end = newline if terminated else len(data)
        line = data[offset:end]
        if line.strip():
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not an object")
                records.append(record)
                good.append((offset, end))
            except ValueError:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
                if not (terminated and data[end + 1 :].strip()):  # the last line: torn by a kill
                    if repair:
                        with open(path, "r+b") as handle:
                            handle.truncate(offset)
                    break
                number = data[:offset].count(b"\n") + 1
                if damaged == "raise":
                    raise DataError(
                        f"{path}: line {number} is damaged (not a JSON object)",
                        "restore the file from a copy: every line of it is needed",
                    ) from None
                bad.append((number, offset, end))
        elif not terminated:
            break
        if not terminated and repair:
            with open(path, "ab") as handle:
                handle.write(b"\n")
        offset = end + 1
    if bad:
        _damaged_lines(path, data, good, bad, set_aside=damaged == "set-aside")
    return records


def _damaged_lines(
    path: Path, data: bytes, good: list[tuple[int, int]], bad: list[tuple[int, int, int]], set_aside: bool
) -> None:
    """Warn about damaged lines; with `set_aside`, move them to the side file and rewrite `path` without them."""
    numbers = ", ".join(str(n) for n, _, _ in bad)
    if not set_aside:
        log.warning(
            "%s: line(s) %s damaged (not JSON objects) and left out; the next run of the command that writes it "
            "sets them aside in %s",
            path,
            numbers,
            damaged_path(path).name,
        )
        return
    side = damaged_path(path)
    with open(side, "ab") as handle:  # first the copy: a kill here leaves the line in both, never in neither
        for _, start, end in bad:
            handle.write(data[start:end].rstrip(b"\r") + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
    atomic_write_bytes(path, b"".join(data[start:end] + b"\n" for start, end in good))
    log.warning(
        "%s: line(s) %s damaged (not JSON objects): set aside in %s, every other record kept; what they "
        "recorded is done again",
        path,
        numbers,
        side,
    )


class JsonlAppender:
    """Append records to a JSONL file, one flush + fsync per record."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        read_jsonl(self.path, repair=True, damaged="set-aside")
        self._handle = open(self.path, "ab")

    def append(self, record: dict) -> None:
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            self._handle.write(line)
            self._handle.flush()
            os.fsync(self._handle.fileno())
        except OSError as exc:  # a full disk: what was appended before is whole; a torn line is cut on resume
            raise write_error(self.path, exc, len(line), None) from None

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

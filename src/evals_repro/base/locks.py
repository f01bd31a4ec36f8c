"""One writer at a time, by an OS lock (`fcntl.flock`) on a small file that names its holder.

Two kinds of lock share this one mechanism and differ only in what a second writer does:
- a result unit (`unit_lock`, a hidden `.<subset>.lock` beside the result): two runs of the same benchmark,
  method and subset would each write the result and its saved run and one would silently replace the other,
  so the second waits, saying for whom, then goes on as if run after the first. Other units run in parallel.
- a study or run directory (`study_writer`, `study.lock` in it): a second command is refused in one line
  naming the holder, since interleaving two commands' appends would mix sessions in one manifest.

The kernel drops the lock the moment its holder dies, however it dies (SIGKILL, a crash, a zombie not yet
reaped), so a lock is never stale and nothing is cleaned up: the next writer simply takes it. The file's
content (pid, host, command, start time) is only a label for the message a second writer gets; an empty or
garbled label (a holder killed between opening and writing it) blocks nobody, and a label left behind tells
the next holder its predecessor ended without finishing. The file is never deleted, so every writer locks
the same inode. On an OS without `flock` there is no lock: one writer at a time is then the user's to ensure.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

LOCK_NAME = "study.lock"


def command_line() -> str:
    """The command this process runs, as a label and a manifest's session record show it."""
    return " ".join(["evals-repro", *sys.argv[1:]])


def _read_label(fd: int) -> dict[str, Any] | None:
    try:
        label = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return label if isinstance(label, dict) else None


def describe(label: dict[str, Any] | None) -> str:
    """Who holds a lock, from its label: `pid 12 on host (`command`, since time)`."""
    if label is None or label.get("pid") is None:
        return "another process that is just starting"
    host = f" on {label['host']}" if label.get("host") else ""
    return f"pid {label['pid']}{host} (`{label.get('command')}`, since {label.get('started')})"


class OwnerLock:
    """An exclusive lock on the file at `path`, labelled with this process's pid, host and `command`.

    `acquire(busy)` calls `busy(holder)` when another process holds the lock: a `busy` that returns means
    wait for it; one that raises refuses (the exception propagates, nothing held). After acquiring,
    `previous` is the label a writer that ended without finishing left behind (None when it finished)."""

    def __init__(self, path: Path, command: str | None = None):
        self.path = Path(path)
        self.command = command if command is not None else command_line()
        self.previous: dict[str, Any] | None = None
        self._fd: int | None = None

    def acquire(self, busy: Callable[[str], None]) -> OwnerLock:
        try:
            import fcntl
        except ImportError:  # no flock on this OS
            return self
        # Opened without O_TRUNC: a second writer must not erase the holder's label.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                busy(describe(_read_label(fd)))
                fcntl.flock(fd, fcntl.LOCK_EX)
            self.previous = _read_label(fd)
            import socket  # here, not at import: a refusal imports this module and never locks

            label = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "command": self.command,
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps(label).encode("utf-8"), 0)
            except OSError:  # a full disk: the lock holds without its label; the writer's own write names the disk
                pass
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    @property
    def stale_note(self) -> str | None:
        """A line saying the previous writer ended without finishing, or None."""
        if self.previous is None or self.previous.get("pid") is None:
            return None
        return (
            f"note: the previous writer (pid {self.previous.get('pid')}, `{self.previous.get('command')}`) "
            "ended without finishing; resuming where it stopped"
        )

    def release(self) -> None:
        if self._fd is None:
            return
        import fcntl

        fd, self._fd = self._fd, None
        try:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)  # an empty label: the last writer finished
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def lock_path(result: Path) -> Path:
    return Path(result).with_name(f".{Path(result).name.removesuffix('.json')}.lock")


@contextlib.contextmanager
def unit_lock(result: Path, say: Callable[[str], None]) -> Iterator[None]:
    """Hold the lock of the result unit at `result` (its `.json` path) while computing and writing it;
    when another process holds it, say so and wait until it is done."""
    unit = Path(result).name.removesuffix(".json")

    def wait(holder: str) -> None:
        say(
            f"{unit}: waiting for {holder}, which is writing the same result ({result}); this run goes on when it is done"
        )

    path = lock_path(result)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = OwnerLock(path).acquire(wait)
    try:
        yield
    finally:
        lock.release()


class StudyLock(OwnerLock):
    """The lock of a study (or run) directory: a second writer is refused in one line naming the holder."""

    def __init__(
        self, directory: Path, command: str | None = None, *, what: str = "study directory", option: str = "--study-dir"
    ):
        super().__init__(Path(directory) / LOCK_NAME, command)
        self.what, self.option = what, option

    def acquire(self, busy: Callable[[str], None] | None = None) -> StudyLock:
        from .errors import UsageError
        from .io import ensure_directory

        def refuse(holder: str) -> None:
            raise UsageError(
                f"{self.what} {self.path.parent} is in use by {holder}",
                "wait for it to finish (the lock is released the moment that process ends)",
            )

        ensure_directory(self.path.parent, self.option)
        super().acquire(busy or refuse)
        return self

    def __enter__(self) -> StudyLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def study_writer(
    directory: Path, echo: Callable[[str], None], *, what: str = "study directory", option: str = "--study-dir"
) -> Iterator[str]:
    """Hold a study (or run) directory's lock for one command, saying when the previous writer ended without
    finishing; yields the command line it records."""
    with StudyLock(directory, what=what, option=option) as lock:
        if lock.stale_note:
            echo(lock.stale_note)
        yield lock.command

"""One writer per study directory: an OS lock (`fcntl.flock`) on `study.lock`, which names its holder.

The kernel drops the lock the moment its holder dies, however it dies (SIGKILL, a crash, a zombie
not yet reaped), so a lock is never stale and nothing has to be cleaned up: the next command simply
takes it. The file's content (pid, host, command, start time) is only a label for the message a
second writer gets; an empty or garbled label (a holder killed between opening and writing it) blocks
nobody. The file is never deleted, so every writer locks the same inode.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from ..base.errors import UsageError

LOCK_NAME = "study.lock"


def _label(handle) -> dict | None:
    try:
        handle.seek(0)
        return json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        return None


class StudyLock:
    def __init__(self, study_dir: Path, command: str):
        self.path = Path(study_dir) / LOCK_NAME
        self.command = command
        self.stale_note: str | None = None
        self._handle: BinaryIO | None = None

    def acquire(self) -> StudyLock:
        import fcntl

        from ..base.io import ensure_directory

        ensure_directory(self.path.parent, "--study-dir")
        # Opened without O_TRUNC: a refused writer must not erase the holder's label.
        handle: BinaryIO = os.fdopen(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644), "r+b")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _label(handle)
            handle.close()
            who = (
                f"pid {holder.get('pid')} on {holder.get('host')} running `{holder.get('command')}` "
                f"since {holder.get('started')}"
                if isinstance(holder, dict)
                else "another process that is just starting"
            )
            raise UsageError(
                f"study directory {self.path.parent} is in use by {who}",
                "wait for it to finish (the lock is released the moment that process ends)",
            ) from None
        previous = _label(handle)
        if isinstance(previous, dict) and previous.get("pid") is not None:
            self.stale_note = (
                f"note: the previous writer (pid {previous.get('pid')}, `{previous.get('command')}`) "
                "ended without finishing; resuming where it stopped"
            )
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": self.command,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(me).encode("utf-8"))
        handle.flush()
        self._handle = handle
        return self

    def release(self) -> None:
        if self._handle is None:
            return
        import fcntl

        try:
            self._handle.seek(0)
            self._handle.truncate()  # an empty label: the last writer finished
            self._handle.flush()
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
        finally:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> StudyLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def command_line() -> str:
    return " ".join(["evals-repro", *sys.argv[1:]])


@contextlib.contextmanager
def study_writer(study_dir: Path, echo: Callable[[str], None]) -> Iterator[str]:
    """Hold the study directory's lock for one command; yields the command line it records."""
    command = command_line()
    with StudyLock(study_dir, command) as lock:
        if lock.stale_note:
            echo(lock.stale_note)
        yield command

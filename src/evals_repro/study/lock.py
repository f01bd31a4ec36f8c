"""One writer per study directory: a lock file naming its holder.

A lock whose holder process is gone (same host, dead pid) is stale and taken over with a
note; a live holder makes a second writer stop with a message naming it.
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

from ..errors import UsageError

LOCK_NAME = "study.lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class StudyLock:
    def __init__(self, study_dir: Path, command: str):
        self.path = Path(study_dir) / LOCK_NAME
        self.command = command
        self.stale_note: str | None = None

    def _holder(self) -> dict | None:
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def acquire(self) -> StudyLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": self.command,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder and holder.get("host") == me["host"] and not _alive(int(holder.get("pid", -1))):
                    self.stale_note = f"took over a stale lock from pid {holder.get('pid')} ({holder.get('command')})"
                    self.path.unlink(missing_ok=True)
                    continue
                who = (
                    (
                        f"pid {holder.get('pid')} on {holder.get('host')} running `{holder.get('command')}` "
                        f"since {holder.get('started')}"
                    )
                    if holder
                    else "an unreadable lock file"
                )
                raise UsageError(
                    f"study directory {self.path.parent} is in use by {who}",
                    f"wait for it to finish, or remove {self.path} if that process is gone",
                ) from None
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(me, handle)
            return self
        raise UsageError(f"could not take {self.path}", "remove the lock file and retry")  # pragma: no cover

    def release(self) -> None:
        holder = self._holder()
        if holder and holder.get("pid") == os.getpid():
            self.path.unlink(missing_ok=True)

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

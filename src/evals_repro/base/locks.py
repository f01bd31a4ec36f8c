"""One writer per result unit: an OS lock (`fcntl.flock`) on a hidden `.<subset>.lock` beside the result.

Two runs of the same benchmark, method and subset at once would each write the result and its saved run,
and one would silently replace the other (or mix their files). The lock makes the second wait, saying for
whom, then go on as if run after the first (with `--resume` it keeps the first's result). Different
methods or subsets have different locks and run in parallel. The kernel drops the lock when its holder
dies, however it dies, so a lock is never stale; the file's content (pid, command, start time) is only a
label for the waiting message, and the file is never deleted, so every writer locks the same inode.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path


def lock_path(result: Path) -> Path:
    return Path(result).with_name(f".{Path(result).name.removesuffix('.json')}.lock")


def _holder(fd: int) -> str:
    try:
        label = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
        return f"pid {label['pid']} (`{label['command']}`, since {label['started']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process that is just starting"


@contextlib.contextmanager
def unit_lock(result: Path, say: Callable[[str], None]) -> Iterator[None]:
    """Hold the lock of the result unit at `result` (its `.json` path) while computing and writing it;
    when another process holds it, say so and wait until it is done."""
    try:
        import fcntl
    except ImportError:  # no flock on this OS: one writer per unit is then the user's to ensure
        yield
        return
    path = lock_path(result)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # no O_TRUNC: a waiter must not erase the holder's label
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(
                f"{Path(result).name.removesuffix('.json')}: waiting for {_holder(fd)}, which is writing the same "
                f"result ({result}); this run goes on when it is done"
            )
            fcntl.flock(fd, fcntl.LOCK_EX)
        label = {
            "pid": os.getpid(),
            "command": " ".join(["evals-repro", *sys.argv[1:]]),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(label).encode("utf-8"), 0)
        except OSError:  # a full disk: the lock holds without its label; the result's own write names the disk
            pass
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)

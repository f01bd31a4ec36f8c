"""The study lock is an OS lock: it dies with its holder (even a zombie), an empty label blocks nobody,
and a live holder is named (pid, host, command) in the refusal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evals_repro.base.errors import UsageError
from evals_repro.cli import main
from evals_repro.study.lock import LOCK_NAME, StudyLock

HOLD = """
import sys, time
from pathlib import Path
from evals_repro.study.lock import StudyLock
lock = StudyLock(Path(sys.argv[1]), "evals-repro rerank-study quality --models cohere-pro").acquire()
print("held", flush=True)
time.sleep(120)
"""


def hold(study: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(study)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def state(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("State:"):
            return line.split()[1]
    return "?"


def test_live_holder_is_named_and_killed_zombie_holder_blocks_nothing(tmp_path):
    study = tmp_path / "study"
    proc = hold(study)
    try:
        with pytest.raises(UsageError) as info:
            StudyLock(study, "evals-repro rerank-study latency").acquire()
        line = info.value.one_line()
        assert f"pid {proc.pid}" in line and "rerank-study quality --models cohere-pro" in line
        assert os.uname().nodename in line
        proc.send_signal(signal.SIGKILL)
        deadline = time.time() + 10
        while state(proc.pid) != "Z" and time.time() < deadline:  # killed, not reaped: a zombie
            time.sleep(0.01)
        assert state(proc.pid) == "Z"
        lock = StudyLock(study, "evals-repro rerank-study latency").acquire()  # at once, no cleanup
        assert lock.stale_note and str(proc.pid) in lock.stale_note
        lock.release()
    finally:
        proc.kill()
        proc.wait()


def test_empty_lock_file_blocks_nothing(tmp_path):
    study = tmp_path / "study"
    study.mkdir()
    (study / LOCK_NAME).write_bytes(b"")  # a holder killed between creating the file and writing its label
    with StudyLock(study, "evals-repro rerank-study quality") as lock:
        assert lock.stale_note is None
        with pytest.raises(UsageError, match="in use by pid"):
            StudyLock(study, "second").acquire()
    with StudyLock(study, "third"):  # released: free again
        pass


def test_garbled_label_of_a_live_holder_still_blocks(tmp_path):
    study = tmp_path / "study"
    proc = hold(study)
    try:
        (study / LOCK_NAME).write_bytes(b"\x00garbage")
        with pytest.raises(UsageError, match="in use by another process"):
            StudyLock(study, "second").acquire()
    finally:
        proc.kill()
        proc.wait()


def test_cli_refuses_a_second_writer_in_one_line(tmp_path, capsys):
    study = tmp_path / "study"
    proc = hold(study)
    try:
        code = main(["rerank-study", "quality", "--models", "minilm", "--study-dir", str(study)])
    finally:
        proc.kill()
        proc.wait()
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"in use by pid {proc.pid}" in err

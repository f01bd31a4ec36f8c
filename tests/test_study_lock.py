"""The study lock is an OS lock: it dies with its holder (even a zombie), an empty label blocks nobody,
and a live holder is named (pid, host, command) in the refusal."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evals_repro.base.errors import UsageError
from evals_repro.base.locks import LOCK_NAME, StudyLock
from evals_repro.cli import main

HOLD = """
import sys, time
from pathlib import Path
from evals_repro.base.locks import StudyLock
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


# -- one mechanism for both locks: the result unit's lock labels and names its holder as the study's does --------


def test_a_unit_lock_labels_its_holder_with_the_host_as_a_study_lock_does(tmp_path):
    from evals_repro.base.locks import lock_path, unit_lock

    result = tmp_path / "sample" / "bm25" / "heat-pumps.json"
    with unit_lock(result, say=print):
        label = json.loads(lock_path(result).read_bytes())
        assert label["pid"] == os.getpid() and label["host"] == os.uname().nodename
        assert label["command"].startswith("evals-repro")
    assert lock_path(result).read_bytes() == b""  # finished: an empty label


def test_a_waiting_unit_names_a_study_holder_as_the_study_refusal_does(tmp_path):
    """The same label, the same words: a unit's waiting line names the host too."""
    from evals_repro.base.locks import unit_lock

    result = tmp_path / "heat-pumps.json"
    said: list[str] = []
    proc = hold(tmp_path / "study")
    try:
        with pytest.raises(UsageError) as info:
            StudyLock(tmp_path / "study", "second").acquire()
        study_words = info.value.one_line().split("in use by ", 1)[1].split(")", 1)[0] + ")"
        shutil.copy(tmp_path / "study" / LOCK_NAME, tmp_path / ".heat-pumps.lock")

        # The copied label names the live holder; a lock held in this process on the copy makes the unit wait.
        fd = os.open(tmp_path / ".heat-pumps.lock", os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        released = threading.Event()

        def say(line: str) -> None:
            said.append(line)
            os.close(fd)  # the holder ends: the unit goes on
            released.set()

        with unit_lock(result, say):
            assert released.is_set()
    finally:
        proc.kill()
        proc.wait()
    assert len(said) == 1 and f"waiting for {study_words}" in said[0]
    assert f"pid {proc.pid} on {os.uname().nodename}" in said[0]


def test_a_vidore_run_directory_in_use_is_named_as_a_run_directory_with_its_option(tmp_path):
    from evals_repro.base.locks import study_writer

    proc = hold(tmp_path / "run")
    try:
        with pytest.raises(UsageError) as info:
            with study_writer(tmp_path / "run", print, what="run directory", option="--out-dir"):
                pass
    finally:
        proc.kill()
        proc.wait()
    assert info.value.one_line().startswith(f"run directory {tmp_path / 'run'} is in use by pid {proc.pid}")
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="--out-dir"):  # a path that cannot be a directory names the option
        with study_writer(tmp_path / "file", print, what="run directory", option="--out-dir"):
            pass

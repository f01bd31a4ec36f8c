"""A result and its saved run, qrels and gains are one unit (issue 22, items 1-3 and 13).

A rerun that fails while writing (a full disk, a file size limit, any OS refusal) leaves the finished result
and its files exactly as they were, says in one line which file and what to free, and exits 2; `run --resume`
recomputes a result whose saved run is not the one its record names; two runs of the same result unit take
turns (an OS lock), different subsets do not wait for each other; a monolingual run over a crosslingual result
prints the monolingual figure. Full disks are made three ways: a file size limit in a child process (the
kernel refuses with EFBIG; runs everywhere), a small tmpfs (real ENOSPC; skipped where mounting is not
allowed) and an OSError injected into one write (ENOSPC at a chosen file).
"""

from __future__ import annotations

import errno
import hashlib
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evals_repro.cli import main
from test_readme_figures import FIGURES

CLI = "import sys; from evals_repro.cli import main; sys.exit(main(sys.argv[1:]))"


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def visible(folder: Path) -> list[str]:
    """Every file but the unit lock (a hidden, empty, never deleted file)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock"))


def run_args(results: Path, cache: Path, *extra: str) -> list[str]:
    where = ["--results-dir", str(results), "--cache-dir", str(cache)]
    return ["run", "bm25", "-b", "sample", "-s", "heat-pumps", *where, *extra]


def cli(args: list[str], capsys) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out + captured.err


def errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error: ")]


@pytest.fixture
def finished(tmp_path, capsys) -> tuple[Path, Path, Path]:
    """The issue's first step: a crosslingual result of heat-pumps (results, cache, its method folder)."""
    results, cache = tmp_path / "F", tmp_path / "cache"
    code, _ = cli(run_args(results, cache, "--setting", "crosslingual"), capsys)
    assert code == 0
    return results, cache, results / "sample" / "bm25"


def assert_unit_intact(results: Path, folder: Path, before: dict[str, str], capsys) -> None:
    """The old unit, byte for byte, nothing beside it, and `evaluate --result` still accepts it."""
    assert digests(folder) == before
    assert visible(folder) == ["heat-pumps.json", "heat-pumps.qrels.gz", "heat-pumps.run.gz"]
    code, text = cli(["evaluate", "--result", str(folder / "heat-pumps.json")], capsys)
    assert code == 0, text


def test_a_rerun_over_the_file_size_limit_leaves_the_finished_subset_whole(finished, capsys):
    """The issue's repro with the kernel refusing: the new run file fits under the limit, the record does not.
    Before, the run file was replaced and the record was not (exit 4, `evaluate --result`: sha256 differs)."""
    results, cache, folder = finished
    before = digests(folder)
    limit = (folder / "heat-pumps.run.gz").stat().st_size  # the top-10 run fits, the 70 kB record does not
    assert (folder / "heat-pumps.json").stat().st_size > 2 * limit

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-c", CLI, *run_args(results, cache, "--top-k", "10")],
        capture_output=True,
        text=True,
        preexec_fn=limited,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = errors(done.stderr)
    assert len(lines) == 1, done.stderr
    assert str(folder / "heat-pumps.json") in lines[0] and "ulimit -f" in lines[0]
    assert_unit_intact(results, folder, before, capsys)
    code, text = cli(run_args(results, cache, "--resume", "--setting", "crosslingual"), capsys)
    assert code == 0 and "complete result kept" in text


def fail_writing(monkeypatch, name: str, err: int = errno.ENOSPC) -> None:
    """Make the write of the temp file of `name` fail as a full disk does (at its fsync, after its bytes)."""
    from evals_repro.base import io

    real = io._staged

    def staged(path: Path, data: bytes) -> Path:
        if Path(path).name == name:
            tmp = real(path, data)  # the bytes reach a temp file, then the disk refuses: it must be removed
            os.unlink(tmp)
            raise OSError(err, os.strerror(err))
        return real(path, data)

    monkeypatch.setattr(io, "_staged", staged)


@pytest.mark.parametrize("name", ["heat-pumps.run.gz", "heat-pumps.qrels.gz", "heat-pumps.json"])
def test_a_full_disk_while_rerunning_names_the_file_and_keeps_the_old_unit(finished, capsys, monkeypatch, name):
    results, cache, folder = finished
    before = digests(folder)
    fail_writing(monkeypatch, name)
    code, text = cli(run_args(results, cache, "--top-k", "10"), capsys)
    assert code == 2
    lines = errors(text)
    assert len(lines) == 1, text
    assert f"cannot write {folder / name} (No space left on device)" in lines[0]
    assert "free at least" in lines[0] and str(folder) in lines[0]
    monkeypatch.undo()
    assert_unit_intact(results, folder, before, capsys)


def test_a_disk_too_full_for_the_lock_label_names_the_results_folder(finished, capsys, monkeypatch):
    """A disk filled to the brim refuses even the unit lock's few label bytes (a write without a file name): the
    line must still name the result file and --results-dir, not guess the cache folder (it said `cannot write
    <cache> ... point --cache-dir at another disk`, with that other disk's free space)."""
    results, cache, folder = finished
    before = digests(folder)

    def full(fd: int, data: bytes, offset: int) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "pwrite", full)  # the lock's label is the only pwrite of a run
    fail_writing(monkeypatch, "heat-pumps.run.gz")
    code, text = cli(run_args(results, cache, "--top-k", "10"), capsys)
    assert code == 2
    lines = errors(text)
    assert len(lines) == 1, text
    assert lines[0].startswith(f"error: cannot write {folder / 'heat-pumps.run.gz'} (No space left on device)")
    assert "--results-dir" in lines[0] and "--cache-dir" not in lines[0] and str(cache) not in lines[0]
    monkeypatch.undo()
    assert_unit_intact(results, folder, before, capsys)


def test_a_stop_between_the_renames_never_leaves_the_old_record_over_a_new_run(finished, capsys, monkeypatch):
    """Ctrl-C (or a kill) after the new run file was renamed into place and before the new record was: the old
    record must already be gone (the unit reads as not written), never left pointing at a run it did not make."""
    results, cache, folder = finished
    real = os.replace

    def stopped_before_the_record(source, target, *args, **kwargs):
        if Path(target).name == "heat-pumps.json":
            raise KeyboardInterrupt
        return real(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "replace", stopped_before_the_record)
    code, _ = cli(run_args(results, cache, "--top-k", "10"), capsys)
    monkeypatch.undo()
    assert code == 130
    assert not (folder / "heat-pumps.json").exists()  # the new run.gz is there; no record claims it
    code, text = cli(run_args(results, cache, "--top-k", "10", "--resume"), capsys)
    assert code == 0 and "complete result kept" not in text
    code, text = cli(["evaluate", "--result", str(folder / "heat-pumps.json")], capsys)
    assert code == 0, text


def test_a_full_disk_on_a_first_run_leaves_no_run_file_without_its_result(tmp_path, capsys, monkeypatch):
    fail_writing(monkeypatch, "heat-pumps.json")
    code, text = cli(run_args(tmp_path / "F", tmp_path / "cache"), capsys)
    assert code == 2 and len(errors(text)) == 1
    assert visible(tmp_path / "F" / "sample" / "bm25") == []


def test_a_read_only_results_folder_is_one_line(finished, capsys, monkeypatch):
    results, cache, folder = finished
    before = digests(folder)
    fail_writing(monkeypatch, "heat-pumps.run.gz", errno.EROFS)
    code, text = cli(run_args(results, cache, "--top-k", "10"), capsys)
    assert code == 2
    assert errors(text) == [
        f"error: cannot write {folder / 'heat-pumps.run.gz'} (Read-only file system): {folder} is on a read-only "
        "disk: point --results-dir at a writable one, then rerun"
    ]
    monkeypatch.undo()
    assert_unit_intact(results, folder, before, capsys)


def test_the_issue_repro_on_a_full_tmpfs(tmp_path, capsys):
    """The issue's own steps: a small tmpfs, a finished crosslingual result, the disk filled, a rerun."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    tried = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if tried.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({tried.stderr.decode().strip() or tried.returncode})")
    try:
        results, cache = mount / "F", tmp_path / "cache"
        code, _ = cli(run_args(results, cache, "--setting", "crosslingual"), capsys)
        assert code == 0
        folder = results / "sample" / "bm25"
        before = digests(folder)
        with open(mount / "filler", "wb", buffering=0) as filler:  # fill the disk, then leave less than a record
            try:
                while True:
                    filler.write(b"\0" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        os.truncate(mount / "filler", (mount / "filler").stat().st_size - 8192)
        code, text = cli(run_args(results, cache, "--top-k", "10"), capsys)
        assert code == 2, text
        lines = errors(text)
        assert len(lines) == 1 and "No space left on device" in lines[0] and "free at least" in lines[0], text
        assert digests(folder) == before
        assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and not p.name.endswith(".lock")) == []
        code, text = cli(["evaluate", "--result", str(folder / "heat-pumps.json")], capsys)
        assert code == 0, text
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_tmpfs_filled_to_the_brim_names_the_results_folder(tmp_path, capsys):
    """No byte left at all (not even for the unit lock's label): one line naming the result and --results-dir."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    tried = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if tried.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({tried.stderr.decode().strip() or tried.returncode})")
    try:
        results, cache = mount / "F", tmp_path / "cache"
        code, _ = cli(run_args(results, cache, "--setting", "crosslingual"), capsys)
        assert code == 0
        folder = results / "sample" / "bm25"
        before = digests(folder)
        with open(mount / "filler", "wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(b"\0" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        code, text = cli(run_args(results, cache, "--top-k", "10"), capsys)
        assert code == 2, text
        lines = errors(text)
        assert len(lines) == 1 and f"cannot write {folder}" in lines[0] and "--results-dir" in lines[0], text
        assert str(cache) not in lines[0]
        assert digests(folder) == before
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_resume_recomputes_a_result_whose_saved_run_is_not_its_own(finished, capsys):
    """The state the issue's failed rerun left behind (old record, new run file): `--resume` used to keep it."""
    results, cache, folder = finished
    other = results.parent / "other"
    assert cli(run_args(other, cache, "--setting", "crosslingual", "--top-k", "10"), capsys)[0] == 0
    (folder / "heat-pumps.run.gz").write_bytes((other / "sample" / "bm25" / "heat-pumps.run.gz").read_bytes())
    code, text = cli(run_args(results, cache, "--resume", "--setting", "crosslingual"), capsys)
    assert code == 0
    assert (
        "heat-pumps: recomputing, the existing result does not match (its saved heat-pumps.run.gz is not the file "
        "heat-pumps.json records: sha256 differs)" in text
    )
    assert "skipped" not in text.split("recomputing", 1)[1]
    assert cli(["evaluate", "--result", str(folder / "heat-pumps.json")], capsys)[0] == 0
    (folder / "heat-pumps.qrels.gz").unlink()
    code, text = cli(run_args(results, cache, "--resume", "--setting", "crosslingual"), capsys)
    assert code == 0 and "its saved heat-pumps.qrels.gz is missing" in text
    assert cli(["evaluate", "--result", str(folder / "heat-pumps.json")], capsys)[0] == 0


# -- two writers -------------------------------------------------------------------------------------

HOLD = """
import fcntl, json, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.pwrite(fd, json.dumps({"pid": os.getpid(), "command": "evals-repro run bm25 (the other one)",
                         "started": "now"}).encode(), 0)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def hold_lock(path: Path, seconds: float) -> subprocess.Popen:
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_a_second_writer_of_the_same_result_waits_and_says_for_whom(tmp_path, capsys):
    results, cache = tmp_path / "F", tmp_path / "cache"
    folder = results / "sample" / "bm25"
    holder = hold_lock(folder / ".heat-pumps.lock", 2.0)
    try:
        started = time.monotonic()
        code, text = cli(run_args(results, cache), capsys)
        assert code == 0
        assert time.monotonic() - started >= 1.0 or holder.poll() is not None
        assert f"heat-pumps: waiting for pid {holder.pid} (`evals-repro run bm25 (the other one)`, since now)" in text
        assert holder.poll() is not None  # it went on only once the holder was gone
    finally:
        holder.kill()
        holder.wait()


def test_another_subset_does_not_wait_for_a_held_one(tmp_path, capsys):
    results, cache = tmp_path / "F", tmp_path / "cache"
    holder = hold_lock(results / "sample" / "bm25" / ".heat-pumps.lock", 600.0)
    try:
        code, text = cli(
            ["run", "bm25", "-b", "sample", "-s", "railway-maintenance", "--results-dir", str(results)]
            + ["--cache-dir", str(cache)],
            capsys,
        )
        assert code == 0 and "waiting" not in text
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait()


def test_two_runs_of_the_same_result_at_once_both_finish_with_one_consistent_unit(tmp_path, capsys):
    """Before, both said "written" and the record could sit beside the other run's files. The test holds the
    unit's lock until both runs are waiting on it, so they overlap whatever the machine's load (left to their
    start-up times, the first could finish before the second reached the unit, and nobody waited)."""
    import threading

    from evals_repro.base.locks import OwnerLock, lock_path

    results, cache = tmp_path / "F", tmp_path / "cache"
    assert cli(run_args(results, cache, "-s", "railway-maintenance"), capsys)[0] == 0  # the index, cached once
    folder = results / "sample" / "bm25"
    held = OwnerLock(lock_path(folder / "heat-pumps.json"), command="the test").acquire(lambda holder: None)
    waiting = f"heat-pumps: waiting for pid {os.getpid()}"
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", CLI, *run_args(results, cache, "--top-k", str(k))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in (10, 20)
    ]
    outputs: list[list[list[str]]] = [[[], []] for _ in runs]
    both_wait = threading.Semaphore(0)

    def drain(stream, lines: list[str], signal_wait: bool) -> None:
        for line in stream:
            lines.append(line)
            if signal_wait and line.startswith(waiting):
                both_wait.release()

    readers = [
        threading.Thread(target=drain, args=(getattr(run, name), outputs[i][j], name == "stderr"), daemon=True)
        for i, run in enumerate(runs)
        for j, name in enumerate(("stdout", "stderr"))
    ]
    for reader in readers:
        reader.start()
    try:
        assert both_wait.acquire(timeout=120) and both_wait.acquire(timeout=120), outputs
    finally:
        held.release()
    for run in runs:
        run.wait(timeout=300)
    for reader in readers:
        reader.join(timeout=60)
    errs = ["".join(err) for _, err in outputs]
    assert [r.returncode for r in runs] == [0, 0], outputs
    assert [err.count("heat-pumps: waiting for pid") for err in errs] == [1, 1], errs  # each waited once, on us
    assert cli(["evaluate", "--result", str(folder / "heat-pumps.json")], capsys)[0] == 0


# -- what is printed -----------------------------------------------------------------------------------


def test_a_monolingual_run_over_a_crosslingual_result_prints_the_monolingual_figure(finished, capsys):
    """The figures are the README's reference table (heat-pumps: 74.2 monolingual, 44.6 crosslingual)."""
    results, cache, folder = finished
    (row,) = FIGURES["bm25"]  # one row: BM25 is the same on every machine
    mono, cross = row["heat-pumps"]
    code, text = cli(run_args(results, cache), capsys)
    assert code == 0
    line = next(line for line in text.splitlines() if line.startswith("heat-pumps: ") and "nDCG@10" in line)
    assert f"nDCG@10 {mono}" in line and f"nDCG@10 {cross}" not in line
    assert "monolingual queries" in line
    assert "extended the existing result: it stays crosslingual" in line
    code, text = cli(run_args(results, cache, "--resume", "-m", "ndcg_at_7"), capsys)
    assert code == 0
    line = next(line for line in text.splitlines() if line.startswith("heat-pumps: ") and "nDCG@10" in line)
    assert f"nDCG@10 {mono}" in line and "other measure(s) kept" in line


def test_a_full_disk_under_report_output_says_what_to_free(finished, capsys, monkeypatch, tmp_path):
    """`report -o` on a full disk: the line names the file and the space to free (it said "choose a path you can
    write to, or fix its permissions", as if the folder were not writable)."""
    results, _, _ = finished
    fail_writing(monkeypatch, "tables.md")
    out = tmp_path / "out" / "tables.md"
    code, text = cli(["report", "-b", "sample", "--results-dir", str(results), "-o", str(out)], capsys)
    assert code == 2
    lines = errors(text)
    assert len(lines) == 1, text
    assert lines[0].startswith(f"error: cannot write {out} (No space left on device): free at least ")
    assert "point --output at another disk" in lines[0] and "permissions" not in lines[0]
    assert not out.exists()

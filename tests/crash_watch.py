"""What the crash trials see of a child from outside: when an answer reached it, when it was quiet (so it
had acted on what it had), and whether the files it left after a kill are whole."""

from __future__ import annotations

import gzip
import json
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

_TCP_CLOSE = 7


def _tcp_counts(connection: socket.socket) -> tuple[int, int, int]:
    """(state, bytes the peer acknowledged, bytes written) of a TCP connection, from one TCP_INFO snapshot
    (Linux >= 4.19: tcpi_bytes_acked, and tcpi_bytes_sent - tcpi_bytes_retrans + tcpi_notsent_bytes)."""
    info = connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 216)
    if len(info) < 216:
        raise RuntimeError("the crash trials need Linux >= 4.19 (tcpi_bytes_sent in TCP_INFO)")
    (acked,) = struct.unpack_from("Q", info, 120)
    (notsent,) = struct.unpack_from("I", info, 144)
    sent, retransmitted = struct.unpack_from("QQ", info, 200)
    return info[0], acked, sent - retransmitted + notsent


def on_delivery(connection: socket.socket, then: Callable[[float], None]) -> threading.Thread:
    """Call `then(moment)` once the client's kernel has acknowledged every byte written on `connection` so
    far: the answer sits in its socket and the thread reading it was woken. Not called when the connection
    was reset first (a killed client: the count stops short) or nothing was acknowledged for a minute. An
    orderly close after the answer still counts it (the acknowledgement counter survives the close)."""
    _, _, written = _tcp_counts(connection)
    watched = connection.dup()  # stays open when the handler closes its own

    def watch() -> None:
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                state, acked, _ = _tcp_counts(watched)
                if acked >= written:
                    then(time.monotonic())
                    return
                if state == _TCP_CLOSE:
                    return
                time.sleep(0.001)
        except OSError:
            return
        finally:
            watched.close()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def threads_of(pid: int) -> dict[str, tuple[str, int, int]] | None:
    """tid -> (state, voluntary, involuntary context switches) of each thread of `pid`; None once it is gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):  # gone (a process being reaped reads as ESRCH)
        return None
    found = {}
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended (the next look differs)
        found[tid] = (
            fields["State"].split()[0],
            int(fields["voluntary_ctxt_switches"]),
            int(fields["nonvoluntary_ctxt_switches"]),
        )
    return found


class Quiet:
    """Watches a child for moments it could not act: two looks at /proc find the same threads, all asleep
    (state S), with the same context-switch counts, so every thread slept from its first look to its
    second and all of them at once at the end of the first look. A thread woken before the first look
    (by an answer, or by another thread handing it work) has run and gone back to sleep since.

    `mark` is when the first look of the latest such pair began: whatever was delivered before it, the
    client has acted on. Waiting on a timer or on the network counts as quiet; fsync (state D) does not.
    """

    def __init__(self, pid: int):
        self.pid = pid
        self.mark: float | None = None
        self.looks = 0
        self.quiet_looks = 0
        self.changed = threading.Condition()
        self.stopped = False
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        previous: dict | None = None
        previous_start = 0.0
        while not self.stopped:
            start = time.monotonic()
            threads = threads_of(self.pid)
            if threads is None:
                break
            self.looks += 1
            if threads and threads == previous and all(state == "S" for state, _, _ in threads.values()):
                self.quiet_looks += 1
                with self.changed:
                    self.mark = previous_start
                    self.changed.notify_all()
            previous, previous_start = threads, start
            time.sleep(0.002)

    def wait_after(self, moment: float, timeout: float) -> bool:
        """Whether the child was seen quiet after `moment` (waiting up to `timeout` seconds)."""
        with self.changed:
            return (
                self.changed.wait_for(lambda: self.stopped or (self.mark is not None and self.mark > moment), timeout)
                and not self.stopped
            )

    def stop(self) -> None:
        with self.changed:
            self.stopped = True
            self.changed.notify_all()


def _check_result_unit(path: Path) -> None:
    """A result record found on disk sits beside its own run, qrels and gains (the digests it records)."""
    from evals_repro.records.results import load_record
    from evals_repro.records.runs import saved_files_differ

    differs = saved_files_differ(path, load_record(path))
    assert differs is None, f"{path}: its saved {differs[0].name} is {'missing' if differs[1] else 'not its own'}"


def check_files(root: Path, final: bool) -> None:
    """No partial or corrupt file is visible under `root` (after a kill), and none at all torn when final."""
    from evals_repro.embedders.chunk_file import decode
    from evals_repro.embedders.partial_rows import decode_partial

    for path in sorted(root.rglob("*")):
        if path.is_dir():
            continue
        name = path.name
        if name.startswith(".") and name.endswith(".tmp"):
            continue  # an atomic write cut short: a hidden temp file no reader opens
        data = path.read_bytes()
        if name == "study.lock" or (name.startswith(".") and name.endswith(".lock")):  # study, result unit
            assert data == b"" or isinstance(json.loads(data), dict), f"{path}: garbled lock label"
        elif name.endswith(".jsonl"):
            lines = data.split(b"\n")
            tail = lines.pop()  # b"" when the file ends with a newline
            assert not (final and tail), f"{path}: torn last line left after a complete run"
            for number, line in enumerate(lines, 1):
                if line.strip():
                    json.loads(line), f"{path}:{number}"
        elif name.endswith(".json"):
            try:
                loaded = json.loads(data)
            except ValueError as exc:
                raise AssertionError(f"{path}: partial or corrupt JSON ({exc})") from None
            if isinstance(loaded, dict) and "schema_version" in loaded and isinstance(loaded.get("run"), dict):
                _check_result_unit(path)
        elif name.endswith(".emb"):
            if "partial" in path.parts:
                decode_partial(data)
            else:
                header = json.loads(data.split(b"\n", 2)[1])
                decode(data, int(header["rows"]))
        elif name.endswith(".gz"):
            try:
                gzip.decompress(data)
            except (OSError, EOFError) as exc:
                raise AssertionError(f"{path}: partial or corrupt gzip ({exc})") from None
        else:
            assert data, f"{path}: an empty file"

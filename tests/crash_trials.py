"""Crash trials: SIGKILL a CLI command at seeded random points, resume it, and check what a kill must not do.

A scenario is one CLI command against fake providers. The driver first runs it uninterrupted (the
baseline), then runs chains: a fresh directory and fresh fakes, the command killed with SIGKILL up to
`CHAIN` times at random points (resuming each time), then run to completion. After every kill, every
file the command writes is checked (no partial or corrupt file is visible: JSON parses, `.emb` files
decode, JSONL lines parse except a torn last line, which the next run repairs; atomic-write temp files
are hidden dot files). After each chain:

- no completed request was sent twice: the fakes count billable requests by content (an embedding
  item, a rerank call, an uploaded file...); over the whole chain, no content is completed more often
  than in the baseline;
- the end result equals the baseline's (results, records, store contents; timings aside).

When a request is completed is decided by what happened, not by how long it took (a loaded machine
may take any time to persist an answer): its answer was delivered (the client's kernel acknowledged
every byte of it, so the reading thread was woken), and after that the client was seen quiet before
the kill (`crash_watch.Quiet`: every thread of the child asleep at one instant, none having run since the
previous look). A client that had the answer and nothing left to do has persisted it, or never will:
one that persists only at the end of a call sits waiting for the call's other answers. Answers
delivered after the client was last seen quiet are undecided, and may be sent again.

Kill points are drawn among "the nth billable request arrives, plus a few ms" (in flight), "the nth
billable answer was delivered and the client was then seen quiet" (just persisted: it must not be
sent again) and "t seconds after start" (anywhere, mid-write included). Children fork from a
forkserver with the SDKs preloaded, so a trial costs its work, not an interpreter start.
`EVALS_REPRO_CRASH_KILLS` (default 10) sets the kills per command, `EVALS_REPRO_CRASH_SEED` the seed.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crash_watch import Quiet, check_files, on_delivery

CHAIN = 3  # kills in a row before a chain is run to completion
HANG = 900.0  # seconds after which a child counts as hung (a bound for a stuck child, not a time limit)
QUIET_WAIT = 120.0  # seconds an "answer" kill point waits to see the client quiet before it kills anyway
KILLS = int(os.environ.get("EVALS_REPRO_CRASH_KILLS", "10"))
SEED = int(os.environ.get("EVALS_REPRO_CRASH_SEED", "15"))
PRELOAD = [
    "crash_trials",
    "crash_warmup",
    "evals_repro.cli",
    "evals_repro.cli.commands",
    "evals_repro.runner.evaluation",
    "evals_repro.methods.pipeline",
    "evals_repro.retrieval.dense",
    "evals_repro.embedders.voyage",
    "evals_repro.study.quality",
    "evals_repro.study.latency",
    "evals_repro.stores.upload",
    "evals_repro.rerankers.hosted",
    "numpy",
    "voyageai",
    "cohere",
    "mixedbread",
    "pytest",  # each child re-runs the parent's main script (pytest's) before its target
    "fakes.mixedbread_store",
    "fakes.rerankers",
]

_context: Any = None


def _forkserver():
    global _context
    if _context is None:
        from multiprocessing import forkserver

        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
        # The server must find tests/ (crash_trials, crash_warmup, fakes); Python 3.12.1's forkserver
        # ignores the sys.path it is handed, so give it PYTHONPATH while it starts.
        before = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), before]))
        try:
            forkserver.ensure_running()
        finally:
            if before is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = before
    return _context


def _child(
    args: list[str], env: dict[str, str], cwd: str, log: str, command: Callable[[list[str]], int] | None
) -> None:
    """The command (the CLI's `main` unless given), in a child forked from the preloaded server: output to
    `log`, exit with its code."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.environ.update(env)
    os.chdir(cwd)
    started = time.monotonic()
    preloaded = [name for name in PRELOAD if name not in sys.modules]
    from evals_repro.cli import main

    code = (command or main)(args)
    print(f"[exit {code} after {time.monotonic() - started:.2f} s; not preloaded: {preloaded}]")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


# -- fakes that keep a ledger and pull the trigger ----------------------------------------------------


class Trigger:
    """Call `fire(moment)` once, at the nth billable request's arrival (`on="request"`) or the nth billable
    answer's delivery (`on="answer"`)."""

    def __init__(self, on: str, nth: int, fire: Callable[[float], None]):
        self.on, self.nth, self.fire = on, nth, fire
        self.counts: Counter = Counter()
        self.lock = threading.Lock()

    def event(self, kind: str, moment: float) -> None:
        with self.lock:
            self.counts[kind] += 1
            fire = kind == self.on and self.counts[kind] == self.nth
        if fire:
            self.fire(moment)


class Ledger:
    """Mixin for a fake: `keys(request)` names the billable contents of a request ([] = free); every
    answered billable request is recorded with the time its answer was delivered (`on_delivery`). Every
    other billable answer is held back `slow/2..slow` seconds, so the requests of one call finish far
    apart and a kill can land between them (where a client that persists only at the end of a call pays
    twice)."""

    def __init__(self, *args, slow: float = 0.0, seed: int = SEED, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.answered: list[tuple[int, float, list[str]]] = []  # (trial, time delivered, keys)
        self.watchers: list[threading.Thread] = []
        self.written: list[tuple[int, list[str]]] = []  # (trial, keys) of every billable answer written in full
        self.trial = 0
        self.trigger: Trigger | None = None
        self.arrived: dict[int, tuple[int, Trigger | None]] = {}  # id(request) -> (trial, trigger) at arrival
        self.slow = slow
        self.billable = 0
        self.rng = random.Random(seed)

    def keys(self, request) -> list[str]:
        raise NotImplementedError

    def __enter__(self):
        super().__enter__()
        self._server.handle_error = lambda request, address: None  # a killed client resets its connections
        return self

    def dispatch(self, request):
        billable = bool(self.keys(request))
        with self._lock:  # the trial the request came from (its answer may be written after the next began)
            self.arrived[id(request)] = (self.trial, self.trigger)
        if billable and self.trigger is not None:
            self.trigger.event("request", time.monotonic())
        reply = super().dispatch(request)
        if billable and self.slow and reply.status == 200:
            with self._lock:
                self.billable += 1
                if self.billable % 2 == 0:
                    reply.sleep = max(reply.sleep, self.rng.uniform(self.slow / 2, self.slow))
        return reply

    def after(self, request, reply) -> None:
        keys = self.keys(request) if reply.status == 200 else []
        with self._lock:
            trial, trigger = self.arrived.pop(id(request), (self.trial, self.trigger))
        if keys and request.connection is not None:
            # A slow answer to a killed child is written after the next trial started: it belongs to the
            # killed trial (never delivered), not to the one now running.

            def delivered(moment: float) -> None:
                with self._lock:
                    self.answered.append((trial, moment, keys))
                if trigger is not None:
                    trigger.event("answer", moment)

            watcher = on_delivery(request.connection, delivered)
            with self._lock:
                self.watchers.append(watcher)
                self.written.append((trial, keys))
        super().after(request, reply)

    def settle(self) -> None:
        """Wait until every answer sent so far is known delivered or not (`answered` is then final); once
        the clients are gone (see `wait_idle`)."""
        self.wait_idle()
        with self._lock:
            watchers, self.watchers = self.watchers, []
        for watcher in watchers:
            watcher.join()


# -- scenarios --------------------------------------------------------------------------------------


@dataclass
class Scenario:
    name: str
    fakes: Callable[[], dict[str, Any]]  # fresh fakes (not yet started), by name
    env: Callable[[dict[str, Any]], dict[str, str]]  # environment for the child, given the started fakes
    args: Callable[[Path], list[str]]  # the command line, given the chain directory
    outcome: Callable[[Path, dict[str, Any]], Any]  # what must equal the baseline's, after completion
    setup: Callable[[Path], None] = lambda directory: None
    counted: Callable[[Path, str], bool] = lambda directory, key: True  # keys under the no-repeat rule
    end_checks: Callable[[Path, dict[str, Any]], None] = lambda directory, fakes: None
    command: Callable[[list[str]], int] | None = None  # run instead of the CLI (a module-level function)


@dataclass
class Report:
    kills: int = 0
    chains: int = 0
    children: int = 0
    kill_kinds: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    baseline_seconds: float = 0.0
    delivered_before_kills: int = 0  # answers delivered in killed trials
    completed_before_kills: int = 0  # of those, the ones the client was seen quiet after (not to be sent again)
    quiet_kills: int = 0  # kills with the client seen quiet earlier in its trial


def _completed(fakes: dict[str, Any], cutoffs: dict[int, float | None]) -> Counter:
    """Billable contents whose answer was delivered before the client was last seen quiet in its killed
    trial (`cutoffs`: trial -> that moment, None when never), or delivered in a trial that was not killed."""
    counts: Counter = Counter()
    for fake in fakes.values():
        for trial, delivered, keys in fake.answered:
            if trial not in cutoffs:
                counts.update(keys)
            elif cutoffs[trial] is not None and delivered < cutoffs[trial]:
                counts.update(keys)
    return counts


class Driver:
    def __init__(
        self,
        scenario: Scenario,
        workdir: Path,
        kills: int = KILLS,
        seed: int = SEED,
        kinds: tuple[str, ...] = ("request", "answer", "time"),
    ):
        self.scenario = scenario
        self.workdir = Path(workdir)
        self.kills = kills
        self.kinds = kinds
        self.rng = random.Random(f"{seed}-{scenario.name}")
        self.report = Report()

    def _start_fakes(self) -> dict[str, Any]:
        fakes = self.scenario.fakes()
        for fake in fakes.values():
            fake.__enter__()
        return fakes

    def _run(self, directory: Path, fakes: dict[str, Any], trial: int, point: tuple | None) -> tuple[bool, float]:
        """One child; returns (killed, seconds). `point` = (request|answer, nth, delay) or ("time", seconds)."""
        ctx = _forkserver()
        log = directory.parent / f"{directory.name}.log"
        with open(log, "a") as handle:
            handle.write(f"\n--- trial {trial}, kill point {point}\n")
        proc = ctx.Process(
            target=_child,
            args=(
                self.scenario.args(directory),
                self.scenario.env(fakes),
                str(directory),
                str(log),
                self.scenario.command,
            ),
        )
        killed_at: list[float] = []
        watch: list[Quiet] = []
        lock = threading.Lock()

        def kill() -> None:
            with lock:
                if proc.exitcode is not None or killed_at:
                    return
                # Read before the kill: every answer delivered before this moment was acted on.
                self.cutoffs[trial] = watch[0].mark if watch else None
                killed_at.append(time.monotonic())
                proc.kill()

        def kill_when_quiet(delivered: float) -> None:
            """Kill once the client was seen quiet after this delivery (so it has persisted the answer)."""
            pause = point[2] if point else 0.0

            def wait_then_kill() -> None:
                if watch and watch[0].wait_after(delivered, QUIET_WAIT):
                    time.sleep(pause)
                kill()

            threading.Thread(target=wait_then_kill, daemon=True).start()

        trigger = None
        if point and point[0] == "request":
            delay = point[2]
            trigger = Trigger("request", point[1], lambda moment: threading.Timer(delay, kill).start())
        elif point and point[0] == "answer":
            trigger = Trigger("answer", point[1], kill_when_quiet)
        for fake in fakes.values():
            fake.trial, fake.trigger = trial, trigger
        started = time.monotonic()
        proc.start()
        watch.append(Quiet(proc.pid))
        timer = threading.Timer(point[1], kill) if point and point[0] == "time" else None
        if timer is not None:
            timer.start()
        proc.join(HANG)
        if timer is not None:
            timer.cancel()
        watch[0].stop()
        if proc.exitcode is None:
            proc.kill()
            proc.join()
            raise AssertionError(f"{self.scenario.name}: child hung; see {log}")
        self.report.children += 1
        for fake in fakes.values():
            # Every request the child sent is dispatched and its answer written (or refused) before the next
            # trial starts: a request still unread, or an answer whose `after` had not run yet when the ledger
            # was read, was counted in the wrong trial or not at all (a loaded machine can delay them).
            fake.wait_idle()
            fake.trigger = None
        if killed_at:
            self.report.quiet_kills += self.cutoffs[trial] is not None
            return True, time.monotonic() - started
        assert proc.exitcode == 0, f"{self.scenario.name}: exit {proc.exitcode}:\n{log.read_text()[-3000:]}"
        return False, time.monotonic() - started

    def _point(self, requests: int, seconds: float) -> tuple:
        """A third of kill points fall while a request is in flight, a third just after an answer was
        delivered and the client was then seen quiet (it must be on disk by then), a third at a random time."""
        kind = self.rng.choice(self.kinds)
        nth = self.rng.randint(1, max(1, requests // 2))
        if kind == "request":
            return ("request", nth, self.rng.uniform(0.0, 0.03))
        if kind == "answer":
            return ("answer", nth, self.rng.uniform(0.0, 0.01))
        return ("time", self.rng.uniform(0.02, max(0.05, seconds * 0.8)))

    def _chain(self, name: str, kill: bool) -> tuple[Any, Counter, float, int]:
        directory = self.workdir / name
        directory.mkdir(parents=True)
        self.scenario.setup(directory)
        fakes = self._start_fakes()
        self.cutoffs: dict[int, float | None] = {}  # killed trial -> when the client was last seen quiet
        try:
            trial, seconds = 0, 0.0
            if kill:
                for trial in range(1, CHAIN + 1):
                    done = len({k for f in fakes.values() for _, _, keys in f.answered for k in keys})
                    left = max(0.1, 1 - done / max(1, self.base_keys))  # share of the work still to do
                    point = self._point(max(1, round(self.base_requests * left)), self.base_seconds * left)
                    killed, _ = self._run(directory, fakes, trial, point)
                    check_files(directory, final=not killed)
                    if not killed:
                        break
                    self.report.kills += 1
                    self.report.kill_kinds[point[0]] += 1
                else:
                    trial += 1
                    killed, _ = self._run(directory, fakes, trial, None)
                    assert not killed
            else:
                _, seconds = self._run(directory, fakes, trial, None)
            check_files(directory, final=True)
            outcome = self.scenario.outcome(directory, fakes)
            self.scenario.end_checks(directory, fakes)
            for fake in fakes.values():
                fake.settle()
                written = Counter(k for t, keys in fake.written if t == trial for k in keys)
                seen = Counter(k for t, _, keys in fake.answered if t == trial for k in keys)
                assert seen == written, (  # the run ended normally: its client read every answer
                    f"{self.scenario.name}: {sum((written - seen).values())} answers of an uninterrupted run were "
                    "never seen delivered (crash_watch.on_delivery is broken)"
                )
            completed = _completed(fakes, self.cutoffs)
            for fake in fakes.values():
                for t, moment, keys in fake.answered:
                    if t in self.cutoffs:
                        cutoff = self.cutoffs[t]
                        self.report.delivered_before_kills += len(keys)
                        self.report.completed_before_kills += len(keys) * (cutoff is not None and moment < cutoff)
            arrivals = sum(len(f.answered) for f in fakes.values())
            return (
                outcome,
                Counter({k: v for k, v in completed.items() if self.scenario.counted(directory, k)}),
                seconds,
                arrivals,
            )
        finally:
            for fake in fakes.values():
                fake.__exit__(None, None, None)

    def run(self) -> Report:
        started = time.monotonic()
        self.base_requests, self.base_seconds, self.base_keys = 1, 1.0, 1
        baseline, base_counts, self.base_seconds, self.base_requests = self._chain("baseline", kill=False)
        self.base_keys = len(base_counts)
        self.report.baseline_seconds = self.base_seconds
        assert base_counts, f"{self.scenario.name}: the baseline sent no billable request"
        while self.report.kills < self.kills:
            self.report.chains += 1
            assert self.report.chains <= 4 * self.kills, f"{self.scenario.name}: kill points keep missing"
            outcome, counts, _, _ = self._chain(f"chain-{self.report.chains}", kill=True)
            repeated = {k: (v, base_counts.get(k, 0)) for k, v in counts.items() if v > base_counts.get(k, 0)}
            assert not repeated, f"{self.scenario.name} chain {self.report.chains}: completed requests sent again: " + (
                ", ".join(f"{k[:80]} x{v} (baseline {b})" for k, (v, b) in list(repeated.items())[:5])
            )
            assert outcome == baseline, f"{self.scenario.name} chain {self.report.chains}: result differs from baseline"
        self.report.seconds = time.monotonic() - started
        return self.report

"""Resumable generator and judge calls: one flushed JSONL record per finished call.

A call is identified by the digest of everything its request holds (model, generation settings,
system instruction, text parts, sha256 of each image), so a resumed run skips exactly the calls
already answered (`status` "ok") and retries the failed ones. Workers share the provider's throttle;
each worker thread keeps its own SDK client. Each record carries the call's tokens in and out, its
attempts, retries, 429s and waits, so a run's spend is the sum of its records; a call answered by a server
of your own says so (`self_hosted`: true) and is priced as `prices.SELF_HOSTED`, never billed.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import EvalsError
from ..base.io import JsonlAppender, read_jsonl
from ..base.progress import progress_bar
from ..base.usage import Usage
from ..providers.ceiling import CostCeilingReached
from .llm import ChatClient, GenerationSettings, ModelSpec
from .render import Part

SPEND_KEYS = ("tokens_in", "tokens_out", "reasoning_tokens", "attempts", "retries", "rate_limited")


@dataclass
class CallTask:
    spec: ModelSpec
    generation: GenerationSettings
    system: str
    parts: list[Part]
    fields: dict[str, Any]  # identity written into the record (subset, query id, generator, ...)
    finish: Callable[[dict[str, Any]], None] | None = None  # adds derived fields to an ok record
    digest: str = ""

    def __post_init__(self) -> None:
        if not self.digest:
            self.digest = request_digest(self.spec, self.generation, self.system, self.parts, self.fields)


def request_digest(
    spec: ModelSpec, generation: GenerationSettings, system: str, parts: list[Part], fields: dict[str, Any]
) -> str:
    """What makes a call: its request and its identity (the same prompt for two queries is two calls)."""
    digest = hashlib.sha256()
    head = {"model": spec.name, "generation": generation.describe(), "system": system, "fields": fields}
    digest.update(json.dumps(head, sort_keys=True, ensure_ascii=False).encode())
    for part in parts:
        if part.image is not None:
            digest.update(b"\x01" + hashlib.sha256(part.image).digest())
        else:
            digest.update(b"\x00" + (part.text or "").encode())
    return digest.hexdigest()


def completed(path: Path) -> dict[str, dict[str, Any]]:
    """digest -> the record of every call answered in full (the last one, when repeated)."""
    return {r["digest"]: r for r in read_jsonl(Path(path), damaged="set-aside") if r.get("status") == "ok"}


@dataclass
class CallOutcome:
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # digest -> ok record, reused or new
    sent: int = 0
    failed: int = 0
    reused: int = 0
    session: list[dict[str, Any]] = field(default_factory=list)  # every record this session wrote


def execute(
    path: Path,
    tasks: list[CallTask],
    options: dict[str, Any],
    workers: int,
    what: str,
    echo: Callable[[str], None],
) -> CallOutcome:
    """Send every task not yet answered in `path`, appending one record per finished call."""
    done = completed(path)
    outcome = CallOutcome()
    todo: list[CallTask] = []
    seen: set[str] = set()
    for task in tasks:
        if task.digest in done:
            outcome.records[task.digest] = done[task.digest]
        elif task.digest not in seen:
            todo.append(task)
        seen.add(task.digest)
    outcome.reused = len(outcome.records)
    echo(f"{what}: {len(todo)} call(s) to send, {outcome.reused} reused from {Path(path).name}")
    if not todo:
        return outcome
    local = threading.local()
    write_lock = threading.Lock()

    def call(task: CallTask) -> dict[str, Any]:
        clients = local.__dict__.setdefault("clients", {})
        key = (task.spec, task.generation)
        if key not in clients:
            clients[key] = ChatClient(task.spec, options, task.generation)
        usage = Usage()
        started = time.perf_counter_ns()
        record: dict[str, Any] = {**task.fields, "model": task.spec.name, "digest": task.digest}
        if clients[key].self_hosted:
            record["self_hosted"] = True  # where it was answered: its tokens bill nothing
        try:
            completion = clients[key].complete(task.system, task.parts, usage)
            record.update(
                status="ok",
                text=completion.text,
                finish_reason=completion.finish_reason,
                tokens_in=completion.tokens_in,
                tokens_out=completion.tokens_out,
                reasoning_tokens=completion.reasoning_tokens,
            )
            if task.finish is not None:
                task.finish(record)
        except CostCeilingReached:
            raise  # --max-cost: stop here; every answered call is already in the file
        except EvalsError as exc:
            record.update(status="failed", error=exc.one_line())
        p = task.spec.provider
        record.update(
            attempts=int(usage.get(f"{p}_attempts")),
            retries=int(usage.get(f"{p}_retries")),
            rate_limited=int(usage.get(f"{p}_rate_limited")),
            wait_seconds=round(float(usage.get(f"{p}_wait_seconds")), 6),
            wall_ms=round((time.perf_counter_ns() - started) / 1e6, 3),
        )
        return record

    with JsonlAppender(Path(path)) as out, progress_bar(what, len(todo)) as bar:
        pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="vidore-paper")
        try:
            for future in as_completed([pool.submit(call, task) for task in todo]):
                record = future.result()
                with write_lock:
                    out.append(record)
                outcome.session.append(record)
                outcome.sent += 1
                if record["status"] == "ok":
                    outcome.records[record["digest"]] = record
                else:
                    outcome.failed += 1
                    echo(f"{what}: {record['model']} {_where(record)} failed: {record['error']}")
                bar.advance()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return outcome


def _where(record: dict[str, Any]) -> str:
    return f"{record.get('subset', '?')}/{record.get('query_id', '?')}"


def billed(records: list[dict[str, Any]]) -> dict[tuple[str, str, str], float]:
    """What the calls billed: tokens in and out (reasoning included in out) per provider model; a call to a
    server of your own bills nothing."""
    units: dict[tuple[str, str, str], float] = {}
    for record in records:
        if record.get("self_hosted"):
            continue
        provider, _, model = str(record["model"]).partition(":")
        for unit, key in (("input_tokens", "tokens_in"), ("output_tokens", "tokens_out")):
            if record.get(key):
                units[(provider, model, unit)] = units.get((provider, model, unit), 0) + record[key]
    return units


def self_hosted(records: list[dict[str, Any]]) -> list[str]:
    """The "provider model" of every call answered by a server of your own, as costs name them."""
    return sorted({str(r["model"]).replace(":", " ", 1) for r in records if r.get("self_hosted")})


def spend(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Calls, tokens in/out (reasoning included in out), attempts, retries and 429s, and the cost in USD (None
    when a model has no price: named in `price_unknown`; models on servers of your own are named in
    `self_hosted` and cost nothing), with `cost` worded as every record shows it, in total and per model."""
    from ..providers.prices import cost_of

    def total(rows: list[dict[str, Any]]) -> dict[str, Any]:
        block: dict[str, Any] = {"calls": len(rows)}
        for key in SPEND_KEYS:
            block[key] = int(sum(r.get(key) or 0 for r in rows))
        costing = cost_of(billed(rows), self_hosted(rows))
        block["cost_usd"] = round(costing.usd, 8) if costing.known else None
        block["price_unknown"] = costing.unknown
        block["self_hosted"] = costing.self_hosted
        block["cost"] = costing.text()
        block["prices_date"] = costing.date
        return block

    by_model: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_model.setdefault(record["model"], []).append(record)
    return {**total(records), "by_model": {m: total(rows) for m, rows in sorted(by_model.items())}}


def spend_line(label: str, block: dict[str, Any]) -> str:
    """The counters and the cost as every spend line words it: `$1.23 (prices of ...)`, `price unknown: ...`,
    `self-hosted: no price`, or those joined by ` + `."""
    from ..providers.prices import SELF_HOSTED

    line = (
        f"{label}: {block['calls']:,} call(s), {block['tokens_in']:,} tokens in, {block['tokens_out']:,} out "
        f"({block['reasoning_tokens']:,} reasoning), {block['attempts']:,} attempt(s), "
        f"{block['retries']:,} retried, {block['rate_limited']:,} rate-limited"
    )
    if "cost" not in block or not block["calls"]:
        return line
    dated = "" if block["cost"] == SELF_HOSTED else f" (prices of {block['prices_date']})"  # nothing priced
    return f"{line}, cost {block['cost']}{dated}"

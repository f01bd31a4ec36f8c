"""`rerank-study latency`: strictly serial timed calls on a seed-sampled set of queries.

The plan (which queries, how many repeats) is saved before the first request and reused on
resume. Each invocation warms every (model, subset) once (recorded in `warmup.jsonl`, excluded),
then runs the remaining (query, repeat, model) calls one at a time in a seed-shuffled order.
`latency_ms` is the time inside successful SDK calls; `wall_ms` adds failed attempts, backoff
and throttle waits. Calls that needed a retry are kept but flagged and left out of the statistics.
A plugin's or Python object's reranker that raises or breaks its contract (`ComponentError`) stops the
phase at once, its call recorded as failed: its one line ends the command with exit 5, as in `run`.

Models served by local replicas (qwen3-8b, zerank-2) are timed only after every replica has been shown
to have its prefix cache off (rerankers/vllm_metrics.py); the evidence is written into this session's
entry of `manifest.json` before the first timed call, and a study whose earlier timings of such a
model carry no evidence cannot be resumed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import ComponentError, EvalsError, UsageError
from ..base.io import JsonlAppender, atomic_write_json, read_jsonl
from ..base.locks import study_writer
from ..base.progress import progress_bar
from ..base.usage import Usage
from ..providers.calibration import save as save_calibration
from ..providers.ceiling import CostCeilingReached
from ..providers.prices import spend_text
from .candidates import Candidate
from .costs import bill_into, call_bill, study_costs
from .manifest import MANIFEST, recorded_session, require_same, save_manifest
from .models import (
    DEFAULT_MODELS,
    StudyModel,
    add_spent,
    build_all,
    call_costs,
    call_record,
    parse_models,
    preflight,
    require_model_keys,
    row_identity,
    superseded,
)
from .quality import STUDY_DEFAULT_OPTIONS, load_prepared, select_items
from .sampling import sample_queries, shuffled

log = logging.getLogger(__name__)

PLAN = "latency-plan.json"
LATENCY = "latency.jsonl"
WARMUP = "warmup.jsonl"


@dataclass
class LatencyRequest:
    study_dir: Path = Path("results/rerank-study")
    models: list[str] = field(default_factory=lambda: list(DEFAULT_MODELS))
    samples: int = 20
    repeats: int = 5
    seed: int = 42
    host_location: str | None = None
    cache_dir: Path = Path("cache")
    options: dict[str, Any] = field(default_factory=dict)
    # Benchmarks (or study groups) to time now; the plan always covers every prepared one.
    benchmarks: list[str] = field(default_factory=lambda: ["all"])


def make_plan(
    items: list[tuple[Candidate, dict]], samples: int, repeats: int, seed: int, units: dict[str, str] | None = None
) -> dict[str, Any]:
    """The timed queries: `samples` per benchmark spread over its subsets, or `samples` per subset
    for benchmarks whose `[study] latency_unit` is `subset` (each subset a dataset of its own)."""
    units = units or {}
    by_benchmark: dict[str, dict[str, list[str]]] = {}
    for candidate, _ in items:
        by_benchmark.setdefault(candidate.benchmark, {}).setdefault(candidate.subset, []).append(candidate.query_id)
    queries = {}
    for bench, subsets in sorted(by_benchmark.items()):
        if units.get(bench) == "subset":
            queries[bench] = {name: sample_queries({name: ids}, samples, seed)[name] for name, ids in subsets.items()}
        else:
            queries[bench] = sample_queries(subsets, samples, seed)
    return {"samples": samples, "repeats": repeats, "seed": seed, "units": units, "queries": queries}


def latency_units(manifest: dict[str, Any]) -> dict[str, str]:
    """benchmark -> its latency allocation unit, as recorded when it was prepared."""
    return {
        entry["benchmark"]: entry.get("study", {}).get("latency_unit", "benchmark")
        for entry in manifest.get("datasets", {}).values()
    }


def load_or_make_plan(
    study_dir: Path, items, request: LatencyRequest, units: dict[str, str] | None = None
) -> dict[str, Any]:
    path = Path(study_dir) / PLAN
    settings = {"samples": request.samples, "repeats": request.repeats, "seed": request.seed}
    if path.exists():
        import json

        plan = json.loads(path.read_text(encoding="utf-8"))
        require_same(
            study_dir, "the latency plan (--samples/--repeats/--seed)", {k: plan[k] for k in settings}, settings
        )
        return plan
    plan = make_plan(items, request.samples, request.repeats, request.seed, units)
    atomic_write_json(path, plan)
    return plan


def schedule(plan: dict[str, Any], models: list[StudyModel]) -> list[tuple[str, str, str, int, StudyModel]]:
    """Every (benchmark, subset, query, repeat, model) call, in the plan's deterministic order."""
    seed = plan["seed"]
    queries = [
        (b, s, q) for b, subsets in sorted(plan["queries"].items()) for s, ids in sorted(subsets.items()) for q in ids
    ]
    calls = []
    for repeat in range(plan["repeats"]):
        for bench, subset, qid in shuffled(queries, seed, "queries", str(repeat)):
            for model in shuffled(models, seed, "models", bench, subset, qid, str(repeat)):
                calls.append((bench, subset, qid, repeat, model))
    return calls


def _timed_call(
    reranker, usage, model: StudyModel, candidate: Candidate, texts: dict[str, str]
) -> tuple[dict[str, Any], ComponentError | None]:
    """The call's record, and the ComponentError of a user's reranker that broke its contract."""
    before, billed = usage.as_dict(), usage.billed()
    record = call_record(model, candidate)
    broken = None
    started = time.perf_counter_ns()
    try:
        reranker.rerank(candidate.query, [texts[i] for i in candidate.ids])
        record["status"] = "ok"
    except CostCeilingReached:
        raise  # --max-cost: stop here, every timed call so far is already in latency.jsonl
    except ComponentError as exc:  # the user's own code to fix, not the provider's: recorded, then the stop
        record.update(status="failed", error=exc.one_line())
        broken = exc
    except EvalsError as exc:
        record.update(status="failed", error=exc.one_line())
    wall_ns = time.perf_counter_ns() - started
    record.update(call_costs(before, usage.as_dict(), model.provider))
    record.update(call_bill(billed, usage.billed()))
    record["wall_ms"] = wall_ns / 1e6
    # Successful-call latency: perf_counter_ns around the SDK call(s) that answered (summed when a
    # request had to be split), measured inside providers.retry and read off this worker's Usage.
    record["latency_ms"] = record.pop("call_ms") if record["status"] == "ok" else None
    record["retried"] = record["attempts"] > 1
    return record, broken


def run_latency(request: LatencyRequest, echo: Callable[[str], None] | None = None) -> dict[str, int]:
    echo = echo or log.info  # no callback: the lines are log records (the CLI shows them)
    study_dir = Path(request.study_dir)
    if request.samples < 1 or request.repeats < 1:
        raise UsageError("--samples and --repeats must be at least 1", "use e.g. --samples 20 --repeats 5")
    models = parse_models(request.models)
    require_model_keys(models)
    options = {**STUDY_DEFAULT_OPTIONS, **request.options}
    with study_writer(study_dir, echo) as command:
        manifest, items = load_prepared(study_dir)
        plan = load_or_make_plan(study_dir, items, request, latency_units(manifest))
        host = manifest.setdefault("host", {})
        if request.host_location is not None:
            host["location"] = request.host_location
        rerankers = build_all(models, Path(request.cache_dir), options)
        checked = [m for m in models if hasattr(rerankers[m.name][0], "verify_prefix_cache_off")]
        require_checked_sessions(study_dir, manifest, [m.name for m in checked])
        preflight(rerankers)
        with recorded_session(study_dir, manifest, command) as outcome:
            invocation = len(manifest["sessions"])
            if checked:
                session = manifest["sessions"][-1]
                session["prefix_cache"] = {}
                for model in checked:
                    echo(f"latency: checking that every {model.name} replica has its prefix cache off")
                    session["prefix_cache"][model.name] = rerankers[model.name][0].verify_prefix_cache_off()
                save_manifest(study_dir, manifest)  # the evidence is on disk before the first timed call
            timed = {(c.benchmark, c.subset) for c, _ in select_items(manifest, items, request.benchmarks, study_dir)}
            try:
                counts = _run(study_dir, plan, models, items, rerankers, invocation, host.get("location"), echo, timed)
            finally:
                manifest["cost"] = study_costs(study_dir)  # saved with the session, whatever happened
                save_calibration(request.cache_dir)  # what the providers counted, for later plans
            outcome["status"] = "completed" if counts["failed"] == 0 else "incomplete"
    return counts


def require_checked_sessions(study_dir: Path, manifest: dict[str, Any], names: list[str]) -> None:
    """Timings of a cache-checked model may only join earlier ones that were checked too."""
    if not names:
        return
    sessions = manifest.get("sessions", [])
    for path in (study_dir / LATENCY, study_dir / WARMUP):
        for record in read_jsonl(path, damaged="set-aside"):
            name = record.get("model")
            if name not in names:
                continue
            invocation = record.get("invocation")
            session = (
                sessions[invocation - 1] if isinstance(invocation, int) and 0 < invocation <= len(sessions) else {}
            )
            evidence = (session.get("prefix_cache") or {}).get(name)
            if not evidence or not all(e.get("verified_off") for e in evidence):
                raise UsageError(
                    f"{Path(study_dir) / MANIFEST}: {name} was timed in session {invocation} "
                    f"({session.get('command', 'unknown command')}) without a verified-off prefix cache",
                    "pick a new --study-dir: timings that may have come from a prefix cache must not mix with "
                    "verified ones",
                )


def warmup_queries(lookup: dict, plan: dict[str, Any]) -> dict[tuple[str, str], tuple[Candidate, dict]]:
    """Per (benchmark, subset), the query its warm-up call sends: one outside the plan where the subset has
    one, so that no timed query has been seen by the provider before its first measured call (the repeat
    check relies on it)."""
    planned = {(b, s, q) for b, subsets in plan["queries"].items() for s, ids in subsets.items() for q in ids}
    warmup_query: dict[tuple[str, str], tuple[Candidate, dict]] = {}
    for (bench, subset, qid), item in sorted(lookup.items()):
        current = warmup_query.get((bench, subset))
        if current is None or ((bench, subset, current[0].query_id) in planned and (bench, subset, qid) not in planned):
            warmup_query[(bench, subset)] = item
    return warmup_query


def remaining_calls(
    study_dir: Path, plan: dict[str, Any], models, timed: set[tuple[str, str]] | None, damaged: str = "skip"
):
    """The timed calls still to make (in schedule order), and the (model, model id, plugin version, benchmark,
    subset, query, repeat) keys already recorded (a damaged line is skipped by a plan, set aside by the
    writer). A call timed under another version of a plugin is timed again."""
    done = {
        (*row_identity(r), r["benchmark"], r["subset"], r["query_id"], r["repeat"])
        for r in read_jsonl(Path(study_dir) / LATENCY, damaged=damaged)
        if r.get("status") == "ok"
    }
    calls = [
        c
        for c in schedule(plan, models)
        if (*c[4].identity, c[0], c[1], c[2], c[3]) not in done and (timed is None or (c[0], c[1]) in timed)
    ]
    return calls, done


def _run(
    study_dir: Path,
    plan,
    models,
    items,
    rerankers: dict[str, tuple[Any, Any]],
    invocation: int,
    location: str | None,
    echo: Callable[[str], None],
    timed: set[tuple[str, str]] | None = None,
) -> dict[str, int]:
    lookup = {(c.benchmark, c.subset, c.query_id): (c, texts) for c, texts in items}
    warmup_query = warmup_queries(lookup, plan)
    calls, done = remaining_calls(study_dir, plan, models, timed, damaged="set-aside")
    pending = {call[4].name for call in calls}
    for line in superseded([m for m in models if m.name in pending], done, "timed"):
        echo(f"latency: {line}")  # why a model that was timed before is timed again
    echo(f"latency: {len(calls)} timed call(s) to make, {len(done)} already recorded")
    warmed: set[tuple[str, str, str]] = set()
    counts = {"timed": 0, "failed": 0, "warmups": 0}
    stop: ComponentError | None = None  # a user's reranker that broke its contract: nothing more is sent
    spent = Usage()  # warm-ups included: they are paid like the timed calls
    with (
        JsonlAppender(study_dir / LATENCY) as out,
        JsonlAppender(study_dir / WARMUP) as warm,
        progress_bar("latency", len(calls)) as bar,
    ):
        for bench, subset, qid, repeat, model in calls:
            candidate, texts = lookup[(bench, subset, qid)]
            reranker, usage = rerankers[model.name]
            if (model.name, bench, subset) not in warmed:
                record, broken = _timed_call(reranker, usage, model, *warmup_query[(bench, subset)])
                record.update(invocation=invocation, host_location=location)
                warm.append(record)
                add_spent(spent, record)
                bill_into(spent, record)
                warmed.add((model.name, bench, subset))
                counts["warmups"] += 1
                if broken is not None:
                    stop = broken
                    break
            record, broken = _timed_call(reranker, usage, model, candidate, texts)
            record.update(repeat=repeat, invocation=invocation, host_location=location)
            out.append(record)
            add_spent(spent, record)
            bill_into(spent, record)
            counts["timed"] += 1
            if broken is not None:
                stop = broken
                break
            if record["status"] != "ok":
                counts["failed"] += 1
                echo(f"latency: {model.name} {bench}/{subset} {qid} failed: {record['error']}")
            bar.advance()
    echo(
        f"latency: {counts['timed']} timed, {counts['failed']} failed, {counts['warmups']} warm-up call(s)"
        + (", stopped on a broken reranker" if stop else "")
        + f"; spent: {spend_text(spent.summary(), spent.billed()) if spent.get('requests') else 'nothing'}"
    )
    if stop is not None:
        raise stop  # exit 5: the component's own line, as `evals-repro run` says it
    return counts

"""`rerank-study quality`: every model scores every query's frozen candidates.

One worker pool per provider, so a budget wait at one provider never holds another's workers.
Every finished request is appended to `quality.jsonl` and flushed before the next is counted, so
a killed run resumes without repeating a completed request; adding a model reuses the rest.

A provider's failed request is recorded as failed and the phase goes on (exit 3 at the end; the next
run sends it again). A plugin's or Python object's reranker that raises or breaks its contract
(`ComponentError`, base/contracts.py) stops the phase at once: nothing more is sent, the calls already
under way are recorded, and its one line ends the command with exit 5, as `evals-repro run` ends.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import ComponentError, EvalsError, UsageError
from ..base.io import JsonlAppender, read_jsonl
from ..base.locks import study_writer
from ..base.progress import progress_bar
from ..base.usage import Usage
from ..providers.calibration import save as save_calibration
from ..providers.ceiling import CostCeilingReached
from ..providers.prices import spend_text
from ..rerankers.fitting import DocumentTooLong
from .candidates import Candidate, candidates_path, read_candidates, read_texts
from .costs import bill_into, call_bill, study_costs
from .manifest import load_manifest, recorded_session, require_same
from .models import (
    DEFAULT_MODELS,
    StudyModel,
    add_spent,
    build_all,
    build_reranker,
    call_costs,
    call_record,
    parse_models,
    preflight,
    require_model_keys,
    row_identity,
    superseded,
)

log = logging.getLogger(__name__)

QUALITY = "quality.jsonl"
STUDY_DEFAULT_OPTIONS = {"voyage_tpm": 2_000_000, "voyage_interval": 3.0}


@dataclass
class QualityRequest:
    study_dir: Path = Path("results/rerank-study")
    models: list[str] = field(default_factory=lambda: list(DEFAULT_MODELS))
    workers: int = 2
    cache_dir: Path = Path("cache")
    options: dict[str, Any] = field(default_factory=dict)
    # The first stage whose candidates the models rerank, for benchmarks that allow several (ViDoRe:
    # bm25 or mixedbread-markdown); checked against what `prepare` froze. None: what was frozen.
    first_stage: str | None = None
    # Benchmarks (or study groups) to score now; "all" = every prepared one.
    benchmarks: list[str] = field(default_factory=lambda: ["all"])


def select_items(manifest: dict, items: list, names: list[str], study_dir: Path) -> list:
    """The prepared items of the named benchmarks or study groups ("all": every one)."""
    if names in (["all"], []):
        return items
    groups = {e["benchmark"]: e.get("study", {}).get("group", e["benchmark"]) for e in manifest["datasets"].values()}
    unknown = [n for n in names if n not in groups and n not in groups.values()]
    if unknown:
        raise UsageError(
            f"--benchmark {unknown[0]} is not prepared in {study_dir}",
            f"choose from all, {', '.join(sorted(set(groups) | set(groups.values())))}",
        )
    wanted = set(names)
    return [(c, t) for c, t in items if c.benchmark in wanted or groups.get(c.benchmark) in wanted]


def check_first_stage(study_dir: Path, manifest: dict, first_stage: str | None, echo: Callable[[str], None]) -> None:
    """Say which first stage each multi-first-stage benchmark uses; refuse one that differs from the request."""
    chosen: dict[str, set[str]] = {}
    for entry in manifest["datasets"].values():
        allowed = entry.get("study", {}).get("first_stages") or [entry["first_stage"]]
        if len(allowed) > 1 or (first_stage is not None and first_stage in allowed):
            chosen.setdefault(entry["benchmark"], set()).add(entry["first_stage"])
    if first_stage is not None and not chosen:
        raise UsageError(
            f"--first-stage {first_stage}: no prepared benchmark in {study_dir} can use it",
            "drop --first-stage, or prepare with it",
        )
    for bench, firsts in sorted(chosen.items()):
        if first_stage is not None and firsts != {first_stage}:
            raise UsageError(
                f"{bench} candidates in {study_dir} were frozen with {', '.join(sorted(firsts))}, not {first_stage}",
                f"run `evals-repro rerank-study prepare --first-stage {first_stage}` in a new --study-dir",
            )
        echo(f"quality: {bench} reranks its {', '.join(sorted(firsts))} candidates")


def model_config(model: StudyModel, options: dict[str, Any]) -> dict[str, Any]:
    """A model's entry in the manifest; a plugin's version is recorded (the report reads that version's rows)
    but may change: an upgrade scores the model again in the same study, it does not need a new one."""
    config: dict[str, Any] = {"reranker": model.reranker, "model": model.model}
    if model.plugin is not None:
        config["plugin"] = model.version
    return config


def _fixed(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of a model's configuration that must not change within a study."""
    return None if config is None else {k: v for k, v in config.items() if k != "plugin"}


def completed_requests(study_dir: Path) -> set[tuple[str, str, str, str]]:
    """(model, model id, plugin version, request digest) of every request answered in full."""
    return {
        (*row_identity(r), r["request_digest"])
        for r in read_jsonl(Path(study_dir) / QUALITY, damaged="set-aside")
        if r.get("status") == "ok"
    }


def load_prepared(study_dir: Path) -> tuple[dict, list[tuple[Candidate, dict[str, str]]]]:
    manifest = load_manifest(study_dir)
    if not manifest or not manifest.get("datasets"):
        raise UsageError(
            f"{study_dir} holds no prepared study",
            f"run `evals-repro rerank-study prepare --study-dir {study_dir}` first",
        )
    items: list[tuple[Candidate, dict[str, str]]] = []
    for entry in manifest["datasets"].values():
        path = candidates_path(study_dir, entry["benchmark"], entry["subset"])
        texts = read_texts(path)
        items.extend((c, texts) for c in read_candidates(path, entry["benchmark"], entry["subset"]))
    return manifest, items


def run_quality(request: QualityRequest, echo: Callable[[str], None] | None = None) -> dict[str, int]:
    echo = echo or log.info  # no callback: the lines are log records (the CLI shows them)
    study_dir = Path(request.study_dir)
    if request.workers < 1:
        raise UsageError(f"--quality-workers {request.workers} must be at least 1", "use e.g. 2")
    models = parse_models(request.models)
    require_model_keys(models)
    options = {**STUDY_DEFAULT_OPTIONS, **request.options}
    with study_writer(study_dir, echo) as command:
        manifest, items = load_prepared(study_dir)
        items = select_items(manifest, items, request.benchmarks, study_dir)
        check_first_stage(study_dir, manifest, request.first_stage, echo)
        configs = manifest.setdefault("models", {})
        for model in models:
            require_same(
                study_dir,
                f"model {model.name}'s configuration",
                _fixed(configs.get(model.name)),
                _fixed(model_config(model, options)),
            )
            configs[model.name] = model_config(model, options)
        require_same(
            study_dir,
            "the quality settings",
            manifest.get("quality_settings"),
            {k: options.get(k) for k in sorted(STUDY_DEFAULT_OPTIONS)},
        )
        manifest["quality_settings"] = {k: options.get(k) for k in sorted(STUDY_DEFAULT_OPTIONS)}
        preflight(build_all(models, Path(request.cache_dir), options))  # an unusable local replica stops here, once
        with recorded_session(study_dir, manifest, command) as outcome:
            try:
                counts = _score_all(study_dir, models, items, request, options, echo)
            finally:
                manifest["cost"] = study_costs(study_dir)  # saved with the session, whatever happened
                save_calibration(request.cache_dir)  # what the providers counted, for later plans
            outcome["status"] = "completed" if counts["failed"] == 0 else "incomplete"
    return counts


def _score_all(
    study_dir: Path,
    models: list[StudyModel],
    items,
    request: QualityRequest,
    options: dict[str, Any],
    echo: Callable[[str], None],
) -> dict[str, int]:
    done = completed_requests(study_dir)
    todo: dict[str, list[tuple[StudyModel, Candidate, dict[str, str]]]] = {}
    reused = 0
    for model in models:
        for candidate, texts in items:
            if (*model.identity, candidate.request_digest) in done:
                reused += 1
                continue
            todo.setdefault(model.provider, []).append((model, candidate, texts))
    pending = {model.name for tasks in todo.values() for model, _, _ in tasks}
    for line in superseded([m for m in models if m.name in pending], done, "scored"):
        echo(f"quality: {line}")  # why a model that was scored before is scored again
    total = sum(len(v) for v in todo.values())
    echo(f"quality: {total} request(s) to send, {reused} reused from {QUALITY}")
    counts = {"sent": 0, "failed": 0, "reused": reused}
    spent = Usage()
    write_lock = threading.Lock()
    local = threading.local()
    halted = threading.Event()

    def score(
        model: StudyModel, candidate: Candidate, texts: dict[str, str]
    ) -> tuple[dict[str, Any] | None, ComponentError | None]:
        """The request's record (None: not sent, the phase is stopping), and the ComponentError of a user's
        reranker that broke its contract."""
        if halted.is_set():
            return None, None
        broken = None
        cache = local.__dict__.setdefault("rerankers", {})
        if model.name not in cache:
            cache[model.name] = build_reranker(model, Path(request.cache_dir), options)
        reranker, usage = cache[model.name]
        before, billed = usage.as_dict(), usage.billed()
        started = time.perf_counter_ns()
        record = call_record(model, candidate)
        record.update(request_digest=candidate.request_digest, candidate_digest=candidate.candidate_digest)
        try:
            scores = reranker.rerank(candidate.query, [texts[i] for i in candidate.ids])
            record.update(status="ok", scores=[float(s) for s in scores])
        except CostCeilingReached:
            raise  # --max-cost: stop here, every answered request is already in quality.jsonl
        except ComponentError as exc:  # the user's own code to fix, not the provider's: recorded, then the stop
            record.update(status="failed", error=exc.one_line())
            broken = exc
            halted.set()  # no worker starts another request
        except DocumentTooLong as exc:  # the reranker knows the text, the candidate its page
            record.update(status="failed", error=exc.named(f"page {candidate.ids[exc.index]}").one_line())
        except EvalsError as exc:
            record.update(status="failed", error=exc.one_line())
        record["wall_ms"] = (time.perf_counter_ns() - started) / 1e6
        record.update(call_costs(before, usage.as_dict(), model.provider))
        record.update(call_bill(billed, usage.billed()))
        return record, broken

    stop: ComponentError | None = None  # the first broken answer of a user's reranker
    with JsonlAppender(study_dir / QUALITY) as out, progress_bar("quality", total) as bar:
        pools = {p: ThreadPoolExecutor(max_workers=request.workers, thread_name_prefix=f"q-{p}") for p in todo}
        try:
            futures = [pools[p].submit(score, *task) for p, tasks in todo.items() for task in tasks]
            for future in as_completed(futures):
                if future.cancelled():
                    continue
                record, broken = future.result()
                if record is None:
                    continue
                with write_lock:
                    out.append(record)
                counts["sent"] += 1
                add_spent(spent, record)
                bill_into(spent, record)
                if broken is not None:
                    if stop is None:  # nothing more is sent; the calls under way are awaited and recorded
                        stop = broken
                        for waiting in futures:
                            waiting.cancel()
                elif record["status"] != "ok":
                    counts["failed"] += 1
                    echo(
                        f"quality: {record['model']} {record['benchmark']}/{record['subset']} "
                        f"{record['query_id']} failed: {record['error']}"
                    )
                bar.advance()
        finally:
            for pool in pools.values():
                pool.shutdown(wait=True, cancel_futures=True)
    echo(
        f"quality: {counts['sent']} sent, {counts['failed']} failed"
        + (", stopped on a broken reranker" if stop else " (rerun to retry them)")
        + f", {reused} reused; spent: {spend_text(spent.summary(), spent.billed()) if counts['sent'] else 'nothing'}"
    )
    if stop is not None:
        raise stop  # exit 5: the component's own line, as `evals-repro run` says it
    return counts

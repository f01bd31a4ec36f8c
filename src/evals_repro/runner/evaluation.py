"""The run loop: benchmark -> subsets -> pipeline -> metrics -> one result record and saved run per subset.

`monolingual` scores each subset's native-language queries; `crosslingual` scores every query
language of the benchmark and averages the per-language means (each language weighs the same).
Finished subsets are never lost: each result is written atomically once complete; `--resume` keeps
a result whose record covers the request, re-scores its saved run when only the scoring asked
differs, and recomputes otherwise, saying why. A result never loses a measure it already had. A
subset that fails (bad data, a provider giving up) does not stop the others: every failure is reported
at the end. A bad option or an unusable environment (no key, no Hub access) stops the run at once.

The request and outcome types are in `run_request`; what a subset asks and what `--resume` does with
an existing result, in `resume` (both read by `run --plan` too); writing a record, in `subset_result`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..base.context import MethodContext
from ..base.contracts import SHOWN
from ..base.data import Query, Run, Subset
from ..base.errors import ConfigurationError, EvalsError, UsageError, WriteError, choices
from ..base.io import DISK_REFUSALS, check_directories, ensure_directories, jsonable, write_error
from ..base.locks import unit_lock
from ..base.progress import progress_bar
from ..benchmarks import LoadOptions, get_benchmark, load_subset
from ..benchmarks.declaration import BenchmarkDeclaration
from ..benchmarks.registry import resolve_subsets
from ..methods.pipeline import PipelineSpec
from ..metrics.protocol import ScoringProtocol
from ..providers.ceiling import CostCeilingReached
from ..records.units import Action, DamagedResult, Setting, migrate_method_folder, result_path
from ..retrieval.base import Retriever
from .pooling import pool_plan
from .resume import resume_verdict, subset_coverage
from .run_request import SETTINGS, RunRequest, RunSummary, SubsetOutcome, say_failure
from .scoring import empty_queries, ranked_queries, retrieve
from .subset_result import asked_metrics, report_line, saved_run, write_result

log = logging.getLogger(__name__)


def _validate(request: RunRequest) -> None:
    if request.setting not in SETTINGS:
        raise UsageError(f"--setting '{request.setting}' is not valid", f"choose from {choices(SETTINGS)}")
    if request.top_k < 1:
        raise UsageError(f"--top-k {request.top_k} must be at least 1", "use e.g. --top-k 100")
    if request.language is not None and not request.language.strip():  # read as "not given" it would mean english
        raise UsageError("--language was given an empty value", "name the folder's language, e.g. --language french")
    from ..providers.settings import check_provider_options
    from ..retrieval.sizes import parse_size

    check_provider_options(request.options)  # a bad number is refused even for a method that calls no provider
    parse_size(request.options.get("index_ram"))


@dataclass
class Prepared:
    """A run's request checked and resolved: what `run` does and what `run --plan` counts."""

    spec: PipelineSpec
    decl: BenchmarkDeclaration
    subset_names: list[str]
    protocol: ScoringProtocol
    ctx: MethodContext
    retriever: Retriever
    options: LoadOptions


def prepare_run(request: RunRequest, say: Callable[[str], None], planning: bool = False) -> Prepared:
    """Check the request and build the method (a plan builds it without keys or clients)."""
    from .. import metrics as M

    _validate(request)
    spec = PipelineSpec.from_options(request.method, request.content, request.rerank, request.rerank_depth)
    spec.check_method_options(request.options)
    if not planning:  # checked now, made once a subset is loaded (_run_subsets): a refusal creates nothing
        check_directories((request.results_dir, "--results-dir"), (request.cache_dir, "--cache-dir"))
    decl = get_benchmark(request.benchmark, language=request.language)
    if decl.pooled and spec.rerank is not None:
        pooled = spec.for_pooled_view()
        say(
            f"{decl.name} ranks judged pools: {spec.method_name} runs as {pooled.method_name} "
            f"(the pool replaces {spec.first_stage_label} and is reranked whole)"
        )
        spec = pooled
    subset_names = resolve_subsets(decl, request.subsets)
    moved = migrate_method_folder(request.results_dir, decl.name, spec.label)
    if moved:
        say(moved)
    decl.check_content(request.content)  # before anything is downloaded or built
    natives = {name: decl.subset(name).native_language for name in subset_names}
    spec.check_languages(natives, "--language" if request.language is not None else None)
    if not planning:  # a plan needs no key
        from ..providers.keys import require_keys

        require_keys(spec.key_envs())  # every missing or malformed key named at once, before any SDK is imported
    measures = M.parse_measures(request.measures) if request.measures else list(M.DEFAULT_MEASURES)
    protocol = ScoringProtocol(tuple(measures), request.tie_rule, request.score_precision)
    ctx = MethodContext(
        benchmark=decl.name,
        cache_dir=Path(request.cache_dir),
        content=request.content,
        options=dict(request.options),
        planning=planning,
    )
    # Built once up front: bad keys, unknown rerankers and content mismatches fail before any work.
    retriever = spec.build(ctx)
    options = LoadOptions(content=request.content, revision=request.revision, cache_dir=Path(request.cache_dir))
    return Prepared(spec, decl, subset_names, protocol, ctx, retriever, options)


def run_benchmark(request: RunRequest, echo: Callable[[str], None] | None = None) -> RunSummary:
    """Evaluate one method on the requested subsets of a benchmark; see the module docstring."""
    say = echo or log.info
    prepared = prepare_run(request, say)
    outcomes: list[SubsetOutcome] = []
    try:
        _run_subsets(request, prepared, outcomes, say)
    finally:
        from ..providers.calibration import save

        save(request.cache_dir)  # what the providers counted: later plans are scaled by it
    return RunSummary(prepared.decl.name, prepared.spec.label, outcomes, prepared.ctx.usage)


def _run_subsets(
    request: RunRequest, prepared: Prepared, outcomes: list[SubsetOutcome], say: Callable[[str], None]
) -> None:
    spec, decl, subset_names, protocol = prepared.spec, prepared.decl, prepared.subset_names, prepared.protocol
    ctx, retriever, options = prepared.ctx, prepared.retriever, prepared.options

    def failed(name: str, path: Path, reason: str, error: EvalsError | None) -> None:
        say_failure(
            outcomes, SubsetOutcome(name, path, "failed", reason=reason, error=error), len(subset_names) > 1, say
        )

    with progress_bar(f"{spec.label} on {decl.name}", len(subset_names)) as bar:
        for name in subset_names:
            path = result_path(request.results_dir, decl.name, spec.label, name)
            try:
                # Loaded before the folders and the lock are made: a load that refuses (a Hub benchmark offline
                # without a cache) leaves nothing behind. Loading only reads, so two runs of a unit may both load.
                started = time.perf_counter()
                subset = load_subset(decl, name, options)
                loaded = (subset, time.perf_counter() - started)
                ensure_directories((request.results_dir, "--results-dir"), (request.cache_dir, "--cache-dir"))
                with unit_lock(path, say):  # one writer per result unit; another run of it is waited for
                    outcomes.append(_run_subset(request, decl, name, spec, retriever, ctx, loaded, protocol, path, say))
            except (UsageError, ConfigurationError, WriteError, CostCeilingReached):
                raise  # a bad option, an unusable environment, a full disk or the cost ceiling stops every subset alike
            except OSError as exc:
                if exc.errno not in DISK_REFUSALS:
                    log.debug("subset %s failed", name, exc_info=True)
                    failed(name, path, f"{type(exc).__name__}: {exc}", None)
                else:  # a cache or index write: the disk refuses every later write too
                    where = Path(exc.filename) if exc.filename else Path(request.cache_dir)
                    option = "--results-dir" if Path(request.results_dir) in where.parents else "--cache-dir"
                    raise write_error(where, exc, None, option) from None
            except EvalsError as exc:
                log.debug("subset %s failed", name, exc_info=True)  # the traceback, shown with --verbose
                failed(name, path, exc.one_line(), exc)
            except Exception as exc:  # noqa: BLE001 - one subset's bug must not lose the others' results
                log.debug("subset %s failed", name, exc_info=True)
                failed(name, path, f"{type(exc).__name__}: {exc}", None)
            bar.advance()


def say_empty(name: str, method: str, run: Run, queries: list[Query]) -> None:
    """One warning line naming the queries a method returned no page for (allowed; the record lists them)."""
    empty = empty_queries(run, queries)
    if empty:
        shown = ", ".join(empty[:SHOWN]) + (f" and {len(empty) - SHOWN} more" if len(empty) > SHOWN else "")
        log.warning(
            f"{name}: {method} returned no page for {len(empty)} of {len(queries)} queries ({shown}); "
            "each scores 0 where judged (listed in the record's empty_queries)"
        )


def _run_subset(
    request: RunRequest,
    decl: BenchmarkDeclaration,
    name: str,
    spec: PipelineSpec,
    retriever: Retriever,
    ctx: MethodContext,
    loaded: tuple[Subset, float],
    protocol: ScoringProtocol,
    path: Path,
    say: Callable[[str], None],
) -> SubsetOutcome:
    """Evaluate one (loaded) subset and write its record and saved run; or keep / re-score a result that covers it."""
    from ..records.results import Cost, Flags, MethodConfig, read_record  # the models, once there is work

    try:
        existing = read_record(path)
    except DamagedResult as exc:
        say(f"{name}: recomputing, {exc.one_line()}")
        existing = None
    subset, load_seconds = loaded
    checks = subset.source.get("checks") or {}
    if checks:
        say(f"{name}: data checks: " + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in checks.items()))
    asked = Setting(request.setting)  # what the user asked for is what is printed, whatever the file holds
    request, languages, subset_protocol, coverage, kept = subset_coverage(
        request, decl, subset, spec, ctx, protocol, existing, path, say
    )
    result_options = coverage.options
    queries, judged_asked = ranked_queries(subset, languages)
    if request.resume and existing is not None:
        verdict = resume_verdict(existing, coverage, path)
        if verdict.action is Action.KEEP:
            say(f"{name}: complete result kept ({path}), skipped")
            return SubsetOutcome(name, path, "skipped", asked_metrics(existing, asked))
        if verdict.action is Action.RESCORE:
            run = saved_run(path, existing)
            if run is not None:
                say(f"{name}: re-scoring the saved run ({verdict.reason})")
                record = write_result(
                    Setting(request.setting),
                    decl,
                    subset,
                    spec,
                    existing.config,
                    subset_protocol,
                    run,
                    queries,
                    judged_asked,
                    languages,
                    {**existing.timings, "load_seconds": round(load_seconds, 4)},
                    existing.usage,
                    existing.flags,
                    path,
                    existing.cost,
                )
                report_line(name, record, path, say, asked, kept)
                return SubsetOutcome(name, path, "rescored", asked_metrics(record, asked), verdict.reason)
            say(f"{name}: recomputing, the saved run is missing or changed ({verdict.reason})")
        else:
            say(f"{name}: recomputing, the existing result does not match ({verdict.reason})")
    plan = pool_plan(subset, spec, request.top_k, request.method)
    before = ctx.usage.as_dict()
    billed_before = ctx.usage.billed()
    served_before = ctx.usage.served()
    started = time.perf_counter()
    run = retrieve(subset, retriever, queries, plan.top_k)
    retrieval_seconds = time.perf_counter() - started
    say_empty(name, spec.label, run, queries)
    spent = {k: v - before.get(k, 0) for k, v in ctx.usage.as_dict().items() if v != before.get(k, 0)}
    billed = {k: v - billed_before.get(k, 0) for k, v in ctx.usage.billed().items() if v != billed_before.get(k, 0)}
    served = [f"{p} {m}" for (p, m), calls in ctx.usage.served().items() if calls != served_before.get((p, m), 0)]
    config = MethodConfig(
        method=spec.method_name,
        pipeline=spec.as_dict(),
        content=spec.content,
        top_k=request.top_k,
        options=result_options,
        retriever=jsonable(retriever.describe()),  # a plugin's numpy values too
        view=subset.source.get("view"),
        pool=plan.config,
    )
    depth = getattr(retriever, "meaningful_depth", None)
    flags = (
        Flags(meaningful_depth=depth, note=f"metrics past rank {depth} do not reflect the reranker (first-stage order)")
        if depth is not None
        else None
    )
    timings = {"load_seconds": round(load_seconds, 4), "retrieval_seconds": round(retrieval_seconds, 4)}
    record = write_result(
        Setting(request.setting),
        decl,
        subset,
        spec,
        config,
        subset_protocol,
        run,
        queries,
        judged_asked,
        languages,
        timings,
        spent,
        flags,
        path,
        Cost.of(billed, served),
    )
    report_line(name, record, path, say, asked, kept)
    return SubsetOutcome(name, path, "written", asked_metrics(record, asked))

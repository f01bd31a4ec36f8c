"""The run loop: benchmark -> subsets -> pipeline -> metrics -> one result record and saved run per subset.

`monolingual` scores each subset's native-language queries; `crosslingual` scores every query
language of the benchmark and averages the per-language means (each language weighs the same).
Finished subsets are never lost: each result is written atomically once complete; `--resume` keeps
a result whose record covers the request, re-scores its saved run when only the scoring asked
differs, and recomputes otherwise, saying why. A result never loses a measure it already had. A
subset that fails (bad data, a provider giving up) does not stop the others: every failure is reported
at the end. A bad option or an unusable environment (no key, no Hub access) stops the run at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .benchmarks import LoadOptions, get_benchmark, load_subset
from .benchmarks.declaration import BenchmarkDeclaration
from .benchmarks.registry import resolve_subsets
from .context import MethodContext
from .data import Subset
from .errors import EXIT_USAGE, ConfigurationError, DataError, EvalsError, UsageError, WriteError, choices
from .io import DISK_REFUSALS, ensure_directories, jsonable, write_error
from .metrics.protocol import ScoringProtocol
from .pipeline import PipelineSpec
from .pooling import measures_for, pool_plan
from .progress import progress_bar
from .providers.ceiling import CostCeilingReached
from .results import (
    Action,
    Cost,
    Coverage,
    DamagedResult,
    Flags,
    MethodConfig,
    ResultRecord,
    Setting,
    Verdict,
    migrate_method_folder,
    read_record,
    result_path,
)
from .retrieval.base import Retriever
from .scoring import languages_for, ranked_queries, retrieve
from .subset_result import asked_metrics, report_line, saved_run, write_result
from .subset_result import package_versions as package_versions  # read by prepare, answer, grounding
from .unit_lock import unit_lock
from .usage import Usage

log = logging.getLogger(__name__)

SETTINGS = tuple(s.value for s in Setting)
# Run options that change what a method returns (so a result computed with others does not cover a request).
RESULT_OPTIONS = (
    "rerank_top_k",
    "store_prefix",
    # openai:<model> and rerank-api: what changes the vectors or the scores (never where the servers run)
    "dimensions",
    "prefix_style",
    "query_prefix",
    "document_prefix",
    "rerank_endpoint",
    "rerank_max_tokens",
    "served_models",  # what the servers of openai:/rerank-api: report serving (providers.replicas.record_identity)
)


@dataclass
class RunRequest:
    method: str
    benchmark: str = "sample"
    subsets: list[str] | None = None
    setting: str = "monolingual"
    top_k: int = 100
    results_dir: Path = Path("results")
    cache_dir: Path = Path("cache")
    resume: bool = False
    content: str = "markdown"
    revision: str | None = None
    measures: list[str] | None = None
    language: str | None = None  # native language of a user BEIR folder
    tie_rule: str = "group-mean"  # ties in float-gain measures (RCP-nDCG)
    score_precision: str = "float32"  # float32: trec_eval 9 / pytrec_eval; float64: trec_eval 10
    rerank: str | None = None  # `--rerank NAME[:model]`, the same as `+NAME@depth` in the method
    rerank_depth: int | None = None  # None: the default depth (50) when a reranker is given
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class SubsetOutcome:
    subset: str
    path: Path
    status: str  # "written", "rescored", "skipped" or "failed"
    metrics: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    error: EvalsError | None = field(default=None, compare=False, repr=False)  # a failure's own error, if typed


@dataclass
class RunSummary:
    benchmark: str
    method: str
    outcomes: list[SubsetOutcome]
    usage: Usage

    @property
    def failures(self) -> list[SubsetOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    def refusal(self) -> EvalsError | None:
        """The one error to stop with when every subset failed on its data or options (see `all_refused`)."""
        return all_refused(self.failures, len(self.outcomes))


def all_refused(failures: list[SubsetOutcome], total: int) -> EvalsError | None:
    """The one error to stop with when every one of `total` subsets failed on its data or options (exit 2,
    nothing written, so no `--resume` advice): a single subset's own error, else one line pointing at the
    failures said as they happened (`say_failure`). None when something was done or a failure was of another
    kind (a provider, a bug). `run` and `run --plan` stop alike."""
    if not failures or len(failures) != total:
        return None
    if any(f.error is None or f.error.exit_code != EXIT_USAGE for f in failures):
        return None
    if len(failures) == 1:
        return failures[0].error
    reasons = len({f.reason for f in failures})
    return DataError(
        f"all {len(failures)} subsets failed on their data or options "
        + ("(the same reason, above)" if reasons == 1 else "(each reason above)"),
        "fix what " + ("it names" if reasons == 1 else "each names") + ", then run the command again",
    )


def say_failure(
    outcomes: list[SubsetOutcome],
    failure: SubsetOutcome,
    several: bool,
    say: Callable[[str], None],
) -> None:
    """Say a subset failed, as it happens, and add it to `outcomes`: the reason once (a repeated one points at
    its first subset); a single subset refused on its data says it only in the final error line."""
    first = next((o.subset for o in outcomes if o.status == "failed" and o.reason == failure.reason), None)
    if several or failure.error is None or failure.error.exit_code != EXIT_USAGE:
        say(
            f"{failure.subset}: failed: {failure.reason}"
            if first is None
            else f"{failure.subset}: failed: the same reason as {first}"
        )
    outcomes.append(failure)


def _validate(request: RunRequest) -> None:
    if request.setting not in SETTINGS:
        raise UsageError(f"--setting '{request.setting}' is not valid", f"choose from {choices(SETTINGS)}")
    if request.top_k < 1:
        raise UsageError(f"--top-k {request.top_k} must be at least 1", "use e.g. --top-k 100")
    if request.language is not None and not request.language.strip():  # read as "not given" it would mean english
        raise UsageError("--language was given an empty value", "name the folder's language, e.g. --language french")
    from .providers.settings import check_provider_options
    from .retrieval.sizes import parse_size

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
    from . import metrics as M

    _validate(request)
    spec = PipelineSpec.from_options(request.method, request.content, request.rerank, request.rerank_depth)
    spec.check_method_options(request.options)
    if not planning:
        ensure_directories((request.results_dir, "--results-dir"), (request.cache_dir, "--cache-dir"))
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
        from .providers.keys import require_keys

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
        from .providers.calibration import save

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
                with unit_lock(path, say):  # one writer per result unit; another run of it is waited for
                    outcomes.append(
                        _run_subset(request, decl, name, spec, retriever, ctx, options, protocol, path, say)
                    )
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


def _run_subset(
    request: RunRequest,
    decl: BenchmarkDeclaration,
    name: str,
    spec: PipelineSpec,
    retriever: Retriever,
    ctx: MethodContext,
    options: LoadOptions,
    protocol: ScoringProtocol,
    path: Path,
    say: Callable[[str], None],
) -> SubsetOutcome:
    """Evaluate one subset and write its record and saved run; or keep / re-score a result that covers it."""
    try:
        existing = read_record(path)
    except DamagedResult as exc:
        say(f"{name}: recomputing, {exc.one_line()}")
        existing = None
    started = time.perf_counter()
    subset = load_subset(decl, name, options)
    load_seconds = time.perf_counter() - started
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
    started = time.perf_counter()
    run = retrieve(subset, retriever, queries, plan.top_k)
    retrieval_seconds = time.perf_counter() - started
    spent = {k: v - before.get(k, 0) for k, v in ctx.usage.as_dict().items() if v != before.get(k, 0)}
    billed = {k: v - billed_before.get(k, 0) for k, v in ctx.usage.billed().items() if v != billed_before.get(k, 0)}
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
        Cost.of(billed),
    )
    report_line(name, record, path, say, asked, kept)
    return SubsetOutcome(name, path, "written", asked_metrics(record, asked))


def resume_verdict(existing: ResultRecord, coverage: Coverage, path: Path) -> Verdict:
    """What `--resume` does with an existing result (what `run` does and `run --plan` counts): keep it, re-score
    its saved run, or recompute it; a result whose saved run, judgments or gains are missing or not the files it
    records is recomputed, saying why."""
    from .runs import saved_files_differ

    verdict = existing.covers(coverage)
    differs = None if verdict.action is Action.RERUN else saved_files_differ(path, existing)
    if differs is None:
        return verdict
    wrong, missing = differs
    return Verdict.rerun(
        f"its saved {wrong.name} is missing"
        if missing
        else f"its saved {wrong.name} is not the file {path.name} records: sha256 differs"
    )


def subset_coverage(
    request: RunRequest,
    decl: BenchmarkDeclaration,
    subset: Subset,
    spec: PipelineSpec,
    ctx: MethodContext,
    protocol: ScoringProtocol,
    existing: ResultRecord | None,
    path: Path,
    say: Callable[[str], None],
) -> tuple[RunRequest, list[str], ScoringProtocol, Coverage, list[str]]:
    """What this subset's run asks (`--resume` compares it with the existing result): the request (a
    crosslingual result keeps its setting), the query languages, the protocol to score with, the coverage, and
    the measures kept from the existing result beyond those asked."""
    name = subset.name
    if (
        existing is not None
        and existing.setting is Setting.CROSSLINGUAL
        and request.setting != Setting.CROSSLINGUAL.value
    ):
        # A crosslingual result holds the monolingual scores too; a monolingual run must not replace it with less.
        say(f"{name}: {path.name} holds a crosslingual result (its monolingual scores included): kept crosslingual")
        request = replace(request, setting=Setting.CROSSLINGUAL.value)
    languages = languages_for(request.setting, decl, subset)
    protocol = declared_protocol(decl, name, protocol)
    # A result never loses a measure it had: the existing record's measures join the requested ones.
    wanted = measures_for(subset, list(protocol.measures))
    kept = [m for m in existing.scoring.measures if m not in wanted] if existing is not None else []
    wanted += kept
    digests = subset.digests()
    coverage = Coverage(
        setting=Setting(request.setting),
        pipeline=spec.as_dict(),
        options={k: ctx.options[k] for k in RESULT_OPTIONS if k in ctx.options},
        top_k=request.top_k,
        revision=request.revision,
        data_digest=str(digests["combined"]),
        protocol=protocol.with_measures(measures_for(subset, list(protocol.measures))),
    )
    return request, languages, protocol.with_measures(wanted), coverage, kept


def declared_protocol(decl: BenchmarkDeclaration, name: str, protocol: ScoringProtocol) -> ScoringProtocol:
    """The protocol with what a subset's declaration fixes: `relevance_level` (the minimum grade binary
    measures count, trec_eval -l; TREC DL passage judgments are read with 2, as the track and pyserini do)
    and `ignore_identical_ids` (mteb's flag of the task the subset reproduces, e.g. FiQA2018's)."""
    source = decl.subset_source(name)
    changes: dict[str, Any] = {}
    if source.get("relevance_level") is not None:
        changes["relevance_level"] = int(source["relevance_level"])
    if source.get("ignore_identical_ids") is not None:
        changes["ignore_identical_ids"] = source["ignore_identical_ids"]
    return protocol.replace(**changes) if changes else protocol

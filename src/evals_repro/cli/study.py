"""`evals-repro rerank-study prepare|quality|latency|report`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import typer

from .application import app
from .costs import Money
from .groups import GROUP, OptionGroup, RerankServer, grouped, option
from .options import LIST_HELP, TIMEOUT_DEFAULT, seed_option, split_list

study_app = typer.Typer(
    help="Compare rerankers on frozen candidates: quality and serial latency.", no_args_is_help=True
)
app.add_typer(study_app, name="rerank-study")

STUDY_DIR = typer.Option(Path("results/rerank-study"), "--study-dir", help="The study directory.")
MODELS = typer.Option(
    None,
    "--models",
    help="Study models: mixedbread, voyage, cohere-pro, cohere-fast (local on vLLM: qwen3-8b, zerank-2; "
    f"offline: minilm, e5), reranker:model, or rerank-api:<served model>; {LIST_HELP} (several may also follow one --models).",
)
CACHE_DIR = typer.Option(Path("cache"), "--cache-dir", help="Embedding, index and reranker caches.")
# The study's own defaults (study.quality.STUDY_DEFAULT_OPTIONS; tests/test_robust_inputs.py keeps them equal).
STUDY_VOYAGE_TPM, STUDY_VOYAGE_INTERVAL = 2_000_000, 3.0


@dataclass
class StudyCalls(OptionGroup):
    """The study's Voyage budget (its own defaults: study.quality.STUDY_DEFAULT_OPTIONS) and request timeout."""

    voyage_tpm: Optional[int] = option(
        None, "--voyage-tpm", show_default=f"{STUDY_VOYAGE_TPM:,}", help="Voyage tokens per minute."
    )
    voyage_interval: Optional[float] = option(
        None, "--voyage-interval", show_default=f"{STUDY_VOYAGE_INTERVAL:g}", help="Seconds between Voyage calls."
    )
    timeout: Optional[float] = option(
        None, "--timeout", show_default=TIMEOUT_DEFAULT, help="API request timeout in seconds."
    )


# `--models a b c`: the words after the first model arrive as extra arguments.
EXTRA_MODELS = {"allow_extra_args": True, "ignore_unknown_options": False}


def _echo(line: str) -> None:
    from ..base.progress import console

    console.print(line, markup=False, highlight=False, soft_wrap=True)


def _models(values: Optional[list[str]], extra: list[str]) -> list[str]:
    from ..base.errors import UsageError
    from ..study.models import DEFAULT_MODELS

    if extra and not values:
        raise UsageError(f"unexpected argument(s) {' '.join(extra)}", "name models with --models a b c")
    names: list[str] = []
    for value in [*(values or DEFAULT_MODELS), *extra]:
        names.extend(v for v in value.replace(",", " ").split() if v)
    return names


def _gated_run(stage: str, make_plan: Callable[[], Any], work: Callable[[], dict[str, int]], money: Money) -> None:
    """The cost gate (print the plan, or refuse past --max-cost), then the stage under that ceiling."""
    table = money.gate(make_plan)
    if table is None:
        return
    _fail_on_provider_errors(money.within(work, table), stage)


def _fail_on_provider_errors(counts: dict[str, int], what: str) -> None:
    """Failed requests are kept out of the records; the command still exits 3 so scripts notice. (A reranker of
    the user's own that broke its contract never gets here: the phase stopped on its ComponentError, exit 5.)"""
    from ..base.errors import ProviderError

    if counts["failed"]:
        raise ProviderError(
            f"{counts['failed']} {what} request(s) failed (see the lines above)",
            "rerun the same command: it retries only those",
        )


@study_app.command("prepare")
def prepare_command(
    benchmark: list[str] = typer.Option(
        ["all"],
        "--benchmark",
        "-b",
        help=f"'all' = the study's seven groups (every benchmark with a \\[study] table); {LIST_HELP}.",
    ),
    subsets: Optional[list[str]] = typer.Option(
        None, "--subsets", "-s", help=f"Subsets (default: all of each benchmark); {LIST_HELP}."
    ),
    study_dir: Path = STUDY_DIR,
    first_stage: Optional[str] = typer.Option(
        None, "--first-stage", help="ViDoRe's first stage: mixedbread-markdown (declared) or bm25."
    ),
    cache_dir: Path = CACHE_DIR,
    store_prefix: Optional[str] = typer.Option(None, "--store-prefix", help="Mixedbread store name prefix."),
) -> None:
    """Retrieve the top 100 per native-language query once and freeze them as candidates."""
    from ..base.io import ensure_directory
    from ..study.prepare import PrepareRequest, prepare

    ensure_directory(cache_dir, "--cache-dir")
    options = {"store_prefix": store_prefix} if store_prefix else {}
    prepare(
        PrepareRequest(
            benchmarks=split_list(benchmark, "--benchmark") or ["all"],
            subsets=split_list(subsets, "--subsets"),
            study_dir=study_dir,
            first_stage=first_stage,
            cache_dir=cache_dir,
            options=options,
        ),
    )


@study_app.command("quality", context_settings=EXTRA_MODELS)
@grouped
def quality_command(
    ctx: typer.Context,
    models: Optional[list[str]] = MODELS,
    study_dir: Path = STUDY_DIR,
    benchmark: list[str] = typer.Option(
        ["all"], "--benchmark", "-b", help=f"Prepared benchmarks or groups to score; {LIST_HELP}."
    ),
    first_stage: Optional[str] = typer.Option(
        None, "--first-stage", help="Whose candidates ViDoRe reranks: bm25 | mixedbread-markdown (as prepared)."
    ),
    quality_workers: int = typer.Option(
        2, "--quality-workers", min=1, help="Concurrent requests per provider (at least 1)."
    ),
    calls: StudyCalls = GROUP,
    cache_dir: Path = CACHE_DIR,
    money: Money = GROUP,
    rerank_server: RerankServer = GROUP,
) -> None:
    """Score every query's frozen candidates with each model (resumable)."""
    from ..planning.study import plan_quality
    from ..study.quality import QualityRequest, run_quality

    request = QualityRequest(
        study_dir=study_dir,
        models=_models(models, ctx.args),
        workers=quality_workers,
        cache_dir=cache_dir,
        first_stage=first_stage,
        benchmarks=split_list(benchmark, "--benchmark") or ["all"],
        options={**calls.given(), **rerank_server.given()},
    )
    _gated_run("quality", lambda: plan_quality(request), lambda: run_quality(request), money)


@study_app.command("latency", context_settings=EXTRA_MODELS)
@grouped
def latency_command(
    ctx: typer.Context,
    models: Optional[list[str]] = MODELS,
    study_dir: Path = STUDY_DIR,
    benchmark: list[str] = typer.Option(
        ["all"], "--benchmark", "-b", help=f"Prepared benchmarks or groups to time; {LIST_HELP}."
    ),
    samples: int = typer.Option(
        20, help="Timed queries per dataset: a benchmark, or each of its subsets where its \\[study] table says so."
    ),
    repeats: int = typer.Option(5, help="Timed calls per query and model."),
    seed: int = typer.Option(42, help="Seed of the query sample (the same seed times the same queries)."),
    host_location: Optional[str] = typer.Option(None, "--host-location", help="Where the calls come from."),
    calls: StudyCalls = GROUP,
    cache_dir: Path = CACHE_DIR,
    money: Money = GROUP,
    rerank_server: RerankServer = GROUP,
) -> None:
    """Time strictly serial reranker calls on seed-sampled queries (resumable)."""
    from ..planning.study import plan_latency
    from ..study.latency import LatencyRequest, run_latency

    request = LatencyRequest(
        study_dir=study_dir,
        models=_models(models, ctx.args),
        samples=samples,
        repeats=repeats,
        seed=seed,
        host_location=host_location,
        cache_dir=cache_dir,
        benchmarks=split_list(benchmark, "--benchmark") or ["all"],
        options={**calls.given(), **rerank_server.given()},
    )
    _gated_run("latency", lambda: plan_latency(request), lambda: run_latency(request), money)


@study_app.command("report")
def report_command(
    study_dir: Path = STUDY_DIR,
    resamples: int = typer.Option(2000, help="Bootstrap resamples of the latency and quality intervals (at least 40)."),
    permutations: int = typer.Option(
        10_000, "--permutations", help="Randomization-test permutations per comparison (seeded)."
    ),
    seed: int = seed_option("the report's bootstrap and randomization draws: quality and latency intervals, p-values"),
) -> None:
    """Write report.md, quality.csv, comparisons.csv, latency-summary.json, plots/ and report.html; print report.md."""
    from ..study.report import write_report

    paths = write_report(study_dir, resamples=resamples, permutations=permutations, seed=seed)
    typer.echo(paths["report"].read_text(encoding="utf-8"))
    _echo("wrote " + ", ".join(str(p) for p in paths.values()))

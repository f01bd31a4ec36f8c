"""`reproduce`: every figure of the named sources, from what is on disk or, with `--run`, from what it computes.

Without `--run` nothing is computed from the data: the matrix reads `results/reproduce/<source>.json` (what an
earlier `--run` stored), the user's own result records, and the Hub cache (what a paid run's `--plan` costs).
With `--run` it computes what is free (the card's replay and release claims, BM25, a local model with a GPU) and,
under `--max-cost`, runs the paid models cheapest first while their plans fit what the ceiling leaves.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import EvalsError
from .figures import RerunMethod, Source, load_sources
from .matrix import Matrix, Outcome, judge
from .rerun import RunContext

SNAPSHOT_ENV = "EVALS_REPRO_RCP_SNAPSHOT"  # what the rcp loader reads a local release from (benchmarks/rcp.py)


@dataclass
class ReproduceRequest:
    sources: list[str] | None = None  # None: every source
    run: bool = False
    max_cost: float | None = None
    results_dir: Path = Path("results")
    cache_dir: Path = Path("cache")
    snapshot: Path | None = None  # a local copy of the rcp-ndcg release
    prices: Path | None = None
    plans: bool = True  # plan each paid model to show its cost (reads every subset from the Hub cache)


@contextlib.contextmanager
def _snapshot(path: Path | None) -> Iterator[None]:
    """Runs of the card's models read the same local release as the replay."""
    if path is None:
        yield
        return
    before = os.environ.get(SNAPSHOT_ENV)
    os.environ[SNAPSHOT_ENV] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SNAPSHOT_ENV, None)
        else:
            os.environ[SNAPSHOT_ENV] = before


class _Plans:
    """Each paid method's plan, made once (a plan loads every subset from the Hub cache)."""

    def __init__(self, source: Source, ctx: RunContext, enabled: bool = True):
        self.source, self.ctx, self.enabled = source, ctx, enabled
        self.made: dict[str, tuple[float | None, str]] = {}

    def __call__(self, method: RerunMethod) -> tuple[float | None, str]:
        from .rerun import plan_cost

        if not self.enabled:
            return None, f"`evals-repro run {method.method} -b {self.source.benchmark} --plan` for its cost"
        if method.method not in self.made:
            self.made[method.method] = plan_cost(method, self.source, self.ctx)
        return self.made[method.method]


def _spent(summary) -> float:
    from ..providers.prices import current_prices

    return current_prices().cost(summary.usage.billed()).usd


def _run_one(request, say: Callable[[str], None], ceiling: float | None) -> tuple[Outcome | None, float]:
    """Run one method (resuming what its results hold); (what to say of its figures if it fell short, USD spent)."""
    from ..providers.ceiling import CostGuard, install_guard
    from ..providers.prices import current_prices
    from ..runner.evaluation import run_benchmark

    if ceiling is not None:
        install_guard(CostGuard(ceiling, current_prices()))
    try:
        summary = run_benchmark(request, echo=say)
    except EvalsError as exc:
        return Outcome(not_run=f"its run stopped: {exc.one_line()}"), 0.0
    finally:
        if ceiling is not None:
            install_guard(None)
    spent = _spent(summary)
    from ..providers.prices import spend_text

    say(f"reproduce: {request.method} spent {spend_text(summary.usage.summary(), summary.usage.billed())}")
    if summary.failures:
        failed = "; ".join(f"{f.subset}: {f.reason}" for f in summary.failures[:3])
        return Outcome(not_run=f"{len(summary.failures)} subsets of its run failed ({failed})"), spent
    return None, spent


def _run_reruns(
    source: Source, ctx: RunContext, request: ReproduceRequest, plans: _Plans, say: Callable[[str], None]
) -> dict[str, Outcome]:
    """`--run` for the card's models: local ones with a GPU, paid ones cheapest first under `--max-cost`."""
    from ..providers.prices import usd_text
    from .rerun import gpu_need, gpu_reachable, has_key, key_need, request_for, rerun_cells

    ran: dict[str, Outcome] = {}
    todo = []
    for method in source.rerun:
        cells = rerun_cells(ctx.results_dir, source, method.method)
        if all(f.id in cells for f in source.figures if f.method == method.method and f.route == "rerun"):
            continue
        if method.gpu is not None:
            if not gpu_reachable(method.gpu):
                ran[method.method] = Outcome(cannot=gpu_need(method.gpu))
                continue
            why, _ = _run_one(request_for(method, source, ctx), say, None)
            if why is not None:
                ran[method.method] = why
        elif method.key is not None and not has_key(method.key):
            ran[method.method] = Outcome(cannot=key_need(method.key))
        else:
            todo.append(method)
    left = request.max_cost
    priced = sorted(((plans(m), m) for m in todo), key=lambda item: (item[0][0] is None, item[0][0] or 0.0))
    for (usd, text), method in priced:
        command = f"`evals-repro run {method.method} -b {source.benchmark}`"
        if left is None:
            ran[method.method] = Outcome(not_run=f"paid, {text}: {command}; give --max-cost to run it here")
        elif usd is None:
            ran[method.method] = Outcome(not_run=f"paid, {text}: its cost is not known, so --max-cost cannot admit it")
        elif usd > left:
            ran[method.method] = Outcome(
                not_run=f"paid, {text}: over what --max-cost leaves ({usd_text(left)}): {command}"
            )
        else:
            say(f"reproduce: running {method.method} ({text}; --max-cost leaves {usd_text(left)})")
            why, spent = _run_one(request_for(method, source, ctx), say, left)
            left -= spent
            if why is not None:
                ran[method.method] = why
    return ran


def _run_results(source: Source, request: ReproduceRequest, say: Callable[[str], None]) -> dict[str, Outcome]:
    """`--run` for figures read from result records: the (free) method on the figures' subsets."""
    from ..runner.run_request import RunRequest

    ran: dict[str, Outcome] = {}
    wanted: dict[tuple[str, str], list[str]] = {}
    for fig in source.figures:
        if fig.route == "results" and fig.method and fig.benchmark and fig.subset:
            wanted.setdefault((fig.method, fig.benchmark), []).append(fig.subset)
    for (method, benchmark), subsets in wanted.items():
        run = RunRequest(
            method, benchmark, subsets, results_dir=request.results_dir, cache_dir=request.cache_dir, resume=True
        )
        why, _ = _run_one(run, say, None)
        if why is not None:
            ran[method] = why
    return ran


def source_outcomes(source: Source, request: ReproduceRequest, say: Callable[[str], None]) -> dict[str, Outcome]:
    from . import rerun, results

    ctx = RunContext(request.results_dir, request.cache_dir)
    out: dict[str, Outcome] = {}
    if any(f.route in ("replay", "release", "derived") for f in source.figures):
        out |= _card(source, request)
    if source.rerun:
        plans = _Plans(source, ctx, request.plans or request.run)
        ran = _run_reruns(source, ctx, request, plans, say) if request.run else {}
        out |= rerun.outcomes(source, ctx, ran, plans)
    if any(f.route == "results" for f in source.figures):
        ran = _run_results(source, request, say) if request.run else {}
        out |= results.outcomes(source, request.results_dir, ran)
    return out


def _card(source: Source, request: ReproduceRequest) -> dict[str, Outcome]:
    from ..benchmarks.rcp_release import Release
    from . import rcp_card, store

    release = None
    if request.snapshot is not None or request.run:
        release = Release(revision=source.revision, snapshot=request.snapshot)
        rcp_card.check_whole(release)
    if release is not None and request.run:
        computed = rcp_card.compute(release, source)
        store.save(request.results_dir, computed)
        return rcp_card.outcomes(source, computed)
    return rcp_card.outcomes(source, store.load(request.results_dir, source.name, source.revision, source.revision_tag))


def reproduce(request: ReproduceRequest, say: Callable[[str], None] = lambda line: None) -> Matrix:
    from ..providers.prices import use_prices

    sources = load_sources(request.sources)
    use_prices(request.prices)
    rows = []
    with _snapshot(request.snapshot):
        for source in sources:
            found = source_outcomes(source, request, say)
            default = f"free: `evals-repro reproduce {source.name} --run`"
            rows += [judge(fig, found.get(fig.id), default) for fig in source.figures]
    return Matrix(sources, rows)

"""The card's cells from our own runs of its models (`results/vidore-v3-rcp/<method>/`): a deployment that drifted
since the card's stored scores shows here, never in the replay.

Each subset's saved run, judgments and gains are scored as the replay scores the card's stored runs (both tie
rules, RCP-nDCG@10 and qrel-nDCG@10), so one run of a model fills every table it appears in. A result of another
data revision than the card's is named and never compared. Without results, a paid model's figures say the command
and what its `--plan` costs; a local model without a GPU cannot run here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import DataError, EvalsError
from ..benchmarks.rcp_release import DOMAINS, LANGUAGES, NATIVE_LANGUAGE
from ..metrics.protocol import running_mean
from ..providers.keys import ALIASES
from .figures import METRICS, RULES, VIEWS, RerunMethod, Source, rerun_id
from .matrix import Outcome
from .rcp_claims import MEAN


@dataclass
class RunContext:
    results_dir: Path
    cache_dir: Path


def _subset_means(path: Path) -> dict[tuple[str, str], float]:
    """(metric, rule) -> the subset's mean over its judged queries, from the saved run of one result."""
    from ..rcp.replay import score_query
    from ..records.runs import checked_record, read_saved_gains, read_saved_qrels, read_saved_run

    record = checked_record(path)  # its saved files checked to be its own
    folder = Path(path).parent
    gains = read_saved_gains(folder / record.run.gains_path) if record.run.gains_path else {}
    run, qrels = read_saved_run(folder / record.run.path), read_saved_qrels(folder / record.run.qrels_path)
    queries = [q for q in gains if q in run]
    out = {}
    for rule in RULES:
        pairs = [score_query(run[q], None, gains[q], qrels.get(q, {}), rule) for q in queries]
        if pairs:
            out[("rcp_ndcg_at_10", rule)] = running_mean(p[0] for p in pairs)
            out[("qrel_ndcg_at_10", rule)] = running_mean(p[1] for p in pairs)
    return out


def check_revision(path: Path, record, source: Source) -> None:
    """A result of another data revision than the source's figures is refused by name, never compared."""
    revision = (record.source or {}).get("revision")
    if source.revision is not None and revision != source.revision:
        tag = f" ({source.revision_tag})" if source.revision_tag else ""
        raise DataError(
            f"{path}: computed from data revision {revision or 'unknown'}, not the {source.name} figures' "
            f"{source.revision}{tag}: never compared",
            f"rerun it without --revision (the benchmark's pin), or move {path.parent} out of --results-dir",
        )


def rerun_cells(results_dir: Path, source: Source, method: str) -> dict[str, float]:
    """Every cell (in %) the method's results fill, keyed by `figures.rerun_id`."""
    from ..records.results import read_record, result_path

    benchmark = source.benchmark or "vidore-v3-rcp"
    means: dict[tuple[str, str], dict[tuple[str, str], float]] = {}  # (domain, language) -> (metric, rule) -> mean
    for domain in DOMAINS:
        for lang in LANGUAGES:
            path = result_path(results_dir, benchmark, method, f"{domain}__{lang}")
            record = read_record(path) if path.is_file() else None
            if record is None:
                continue
            check_revision(path, record, source)
            means[(domain, lang)] = _subset_means(path)
    cells: dict[str, float] = {}
    for metric in METRICS:
        for rule in RULES:
            for view in VIEWS:
                row: list[float | None] = []
                for domain in DOMAINS:
                    langs = [NATIVE_LANGUAGE[domain]] if view == "native" else list(LANGUAGES)
                    found = [means.get((domain, lang), {}).get((metric, rule)) for lang in langs]
                    present = [v for v in found if v is not None]
                    value = running_mean(present) if len(present) == len(found) else None
                    row.append(value)
                    if value is not None:
                        cells[rerun_id(method, view, metric, rule, domain)] = 100 * value
                complete = [v for v in row if v is not None]
                if len(complete) == len(row):
                    cells[rerun_id(method, view, metric, rule, MEAN)] = 100 * running_mean(complete)
    return cells


def has_key(name: str) -> bool:
    from ..providers.keys import load_dotenv_once

    load_dotenv_once()
    return any(os.environ.get(n, "").strip() for n in (name, *ALIASES.get(name, ())))


def key_need(name: str) -> str:
    return f"{name} (the key of a paid model)"


def gpu_reachable(local: str) -> bool:
    """A local reranker can run: its replicas are named in the environment, or this machine has an NVIDIA GPU."""
    from ..rerankers.local_models import LOCAL_RERANKERS
    from ..serving.reranker import visible_gpus

    spec = LOCAL_RERANKERS[local]
    return bool(os.environ.get(spec.urls_env, "").strip()) or bool(visible_gpus())


def gpu_need(local: str) -> str:
    from ..rerankers.local_models import LOCAL_RERANKERS

    spec = LOCAL_RERANKERS[local]
    return (
        f"a GPU: `evals-repro serve-reranker {local} --devices 0` on an NVIDIA machine, "
        f"then {spec.urls_env} naming its replicas"
    )


def request_for(method: RerunMethod, source: Source, ctx: RunContext, resume: bool = True):
    from ..runner.run_request import RunRequest

    return RunRequest(
        method=method.method,
        benchmark=source.benchmark or "vidore-v3-rcp",
        results_dir=ctx.results_dir,
        cache_dir=ctx.cache_dir,
        resume=resume,
    )


def plan_cost(method: RerunMethod, source: Source, ctx: RunContext) -> tuple[float | None, str]:
    """(USD or None when unknown, the text to show) of what running the method on every subset would cost."""
    from ..planning.run import plan_run
    from ..providers.prices import current_prices

    try:
        plan = plan_run(request_for(method, source, ctx))
    except EvalsError as exc:
        return None, f"its plan failed: {exc.one_line()}"
    costing = plan.costing(current_prices())
    missing = sum("data is not here" in note for note in plan.notes)
    if missing and not plan.lines:
        return None, "cost unknown: its plan reads the release from the Hub cache, which holds none of it yet"
    text = f"{costing.text()} by its plan"
    if missing:
        text += f" ({missing} subsets not counted: not in the Hub cache)"
    return (costing.usd if costing.known and not missing else None), text


def outcomes(
    source: Source, ctx: RunContext, ran: dict[str, Outcome], plan: Callable[[RerunMethod], tuple[float | None, str]]
) -> dict[str, Outcome]:
    """The outcome of every re-run figure: its cell from the results on disk, else what running it takes.
    `ran`: method -> what `--run` made of it when it did not run it (or its run left cells missing)."""
    out: dict[str, Outcome] = {}
    figures = [f for f in source.figures if f.route == "rerun"]
    for method in source.rerun:
        cells = rerun_cells(ctx.results_dir, source, method.method)
        mine = [f for f in figures if f.method == method.method]
        why = ran.get(method.method)
        if why is None and any(f.id not in cells for f in mine):
            command = f"`evals-repro run {method.method} -b {source.benchmark}`"
            if method.gpu is not None:
                free = f"free (local {method.gpu}): {command}"
                why = Outcome(not_run=free) if gpu_reachable(method.gpu) else Outcome(cannot=gpu_need(method.gpu))
            elif method.key is not None and not has_key(method.key):
                why = Outcome(cannot=key_need(method.key))
            else:
                why = Outcome(not_run=f"paid, {plan(method)[1]}: {command}")
        for fig in mine:
            out[fig.id] = Outcome(cells[fig.id]) if fig.id in cells else (why or Outcome())
    return out

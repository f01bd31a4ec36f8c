"""`run --plan` and `run --max-cost`: the requests a run would send, per subset, from its data and caches."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from ..base.errors import ConfigurationError, EvalsError
from ..providers.plan import Plan
from ..records.units import Action, DamagedResult, result_path
from ..runner.evaluation import prepare_run
from ..runner.resume import resume_verdict, subset_coverage
from ..runner.run_request import RunRequest, SubsetOutcome, all_refused, say_failure
from ..runner.subset_result import saved_run


@contextlib.contextmanager
def hub_offline() -> Iterator[None]:
    """Load datasets from the local cache only: a plan downloads nothing (it says what is missing).

    `datasets` also reads the offline switch once, when first imported: a plan that imports it here (a
    datasets cache exists) must not leave it offline for the run that follows in the same process (`--max-cost`
    plans, then runs), or a subset not yet downloaded is refused as "cannot reach the Hub"."""
    from huggingface_hub import constants  # imported before the variables change: it reads them once, at import

    saved = {key: os.environ.get(key) for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    os.environ.update({key: "1" for key in saved})
    before = getattr(constants, "HF_HUB_OFFLINE", False)
    constants.HF_HUB_OFFLINE = True  # read at import time: set where hub.offline() reads it
    config: Any = sys.modules.get("datasets.config")
    datasets_before = None if config is None else (config.HF_HUB_OFFLINE, config.HF_DATASETS_OFFLINE)
    if config is not None:
        config.HF_HUB_OFFLINE = config.HF_DATASETS_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = before
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        config = sys.modules.get("datasets.config")
        if config is not None:
            if datasets_before is None:  # first imported in here: what it reads from the environment now
                given = os.environ.get("HF_DATASETS_OFFLINE")
                offline = before if given is None else given.upper() in config.ENV_VARS_TRUE_VALUES
                datasets_before = (offline, offline)
            config.HF_HUB_OFFLINE, config.HF_DATASETS_OFFLINE = datasets_before


def plan_run(request: RunRequest, say: Callable[[str], None] = lambda line: None) -> Plan:
    """What `run` would send for this request, subset by subset; with `--resume`, kept results send nothing."""
    from ..benchmarks import load_subset
    from ..providers.calibration import ratios
    from ..records.results import read_record
    from ..runner.pooling import pool_plan
    from ..runner.scoring import ranked_queries

    prepared = prepare_run(request, say, planning=True)
    plan = Plan(ratios=ratios(request.cache_dir))
    planner = getattr(prepared.retriever, "plan", None)
    if planner is None:
        return plan  # a method that pays for nothing (bm25, local embedders and rerankers)
    refused: list[SubsetOutcome] = []
    for name in prepared.subset_names:
        path = result_path(request.results_dir, prepared.decl.name, prepared.spec.label, name)
        try:
            with hub_offline():
                subset = load_subset(prepared.decl, name, prepared.options)
        except ConfigurationError as exc:  # not in the local cache: the run downloads it
            plan.note(
                f"{name}: its data is not here ({exc.one_line()}); download it first (a run without --plan "
                "loads it), then plan again: this subset is not counted"
            )
            continue
        except EvalsError as exc:  # here but unusable (bad JSON, duplicate ids, ...): the run refuses it too
            refused.append(SubsetOutcome(name, path, "failed", reason=exc.one_line(), error=exc))
            plan.note(f"{name}: a run refuses it ({exc.one_line()}): this subset is not counted")
            continue
        existing = None
        if request.resume:
            try:
                existing = read_record(path)
            except DamagedResult:
                existing = None
        asked_for, languages, _, coverage, _ = subset_coverage(
            request, prepared.decl, subset, prepared.spec, prepared.ctx, prepared.protocol, existing, path, say
        )
        if request.resume and existing is not None:
            verdict = resume_verdict(existing, coverage, path)
            kept = verdict.action is Action.KEEP
            rescored = verdict.action is Action.RESCORE and saved_run(path, existing) is not None
            if kept or rescored:
                plan.note(f"{name}: its result is {'kept' if kept else 're-scored'} by --resume (nothing sent)")
                continue
        queries, _ = ranked_queries(subset, languages)
        depth = pool_plan(subset, prepared.spec, asked_for.top_k, request.method).top_k
        planner(subset, queries, depth, plan)
    refusal = all_refused(refused, len(prepared.subset_names))
    if refusal is not None:  # as `run` stops: every subset refused on its data, each reason said once, exit 2
        said: list[SubsetOutcome] = []
        for failure in refused:
            say_failure(said, failure, len(refused) > 1, say)
        raise refusal
    return plan

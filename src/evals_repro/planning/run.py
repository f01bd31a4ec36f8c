"""`run --plan` and `run --max-cost`: the requests a run would send, per subset, from its data and caches.

A plan loads each subset's data as the run would, downloading public data not yet in the local cache (free,
and the run needs it anyway). A subset whose data cannot be loaded (the Hub unreachable, HF_HUB_OFFLINE set
with nothing cached, a gated dataset without a token) is not planned: the plan is incomplete and says so.
"""

from __future__ import annotations

from collections.abc import Callable

from ..base.errors import ConfigurationError, EvalsError
from ..providers.plan import Plan
from ..records.units import Action, DamagedResult, result_path
from ..runner.evaluation import prepare_run
from ..runner.resume import resume_verdict, subset_coverage
from ..runner.run_request import RunRequest, SubsetOutcome, all_refused, say_failure
from ..runner.subset_result import saved_run


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
    plan.scope(len(prepared.subset_names))
    refused: list[SubsetOutcome] = []
    for name in prepared.subset_names:
        path = result_path(request.results_dir, prepared.decl.name, prepared.spec.label, name)
        try:
            subset = load_subset(prepared.decl, name, prepared.options)
        except ConfigurationError as exc:  # the Hub unreachable, offline with nothing cached, no token
            plan.cannot_see(name, f"its data could not be loaded ({exc.one_line()})")
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

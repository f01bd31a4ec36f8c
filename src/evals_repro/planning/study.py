"""`rerank-study quality --plan` and `latency --plan`: the rerank requests still to send, from the frozen
candidates (their exact texts) and what quality.jsonl / latency.jsonl already hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..providers.batching import estimate_tokens
from ..providers.calibration import ratios
from ..providers.plan import Plan, text_prior
from ..study.candidates import Candidate
from ..study.latency import (
    PLAN,
    LatencyRequest,
    latency_units,
    make_plan,
    remaining_calls,
    warmup_queries,
)
from ..study.models import StudyModel, build_reranker, parse_models
from ..study.quality import STUDY_DEFAULT_OPTIONS, QualityRequest, completed_requests, load_prepared, select_items


def _plan_call(reranker: Any, candidate: Candidate, texts: dict[str, str], plan: Plan, what: str) -> bool:
    """Count one rerank call the way `rerank` sends it; False for a reranker that pays for nothing."""
    planner = getattr(reranker, "plan", None)
    if planner is None:
        return False
    documents = [texts[i] for i in candidate.ids]
    prior = text_prior([candidate.query, *documents])
    planner(estimate_tokens(candidate.query), [estimate_tokens(d) for d in documents], plan, what, prior=prior)
    return True


def _rerankers(models: list[StudyModel], cache_dir: Path, options: dict[str, Any]) -> dict[str, Any]:
    return {model.name: build_reranker(model, cache_dir, options, planning=True)[0] for model in models}


def plan_quality(request: QualityRequest) -> Plan:
    study_dir = Path(request.study_dir)
    models = parse_models(request.models)
    options = {**STUDY_DEFAULT_OPTIONS, **request.options}
    manifest, items = load_prepared(study_dir)
    items = select_items(manifest, items, request.benchmarks, study_dir)
    done = completed_requests(study_dir)
    rerankers = _rerankers(models, Path(request.cache_dir), options)
    plan = Plan(ratios=ratios(request.cache_dir))
    for model in models:
        reranker = rerankers[model.name]
        held = 0
        for candidate, texts in items:
            if (*model.identity, candidate.request_digest) in done:
                held += 1
            elif not _plan_call(reranker, candidate, texts, plan, "quality"):
                break
        if held and getattr(reranker, "plan", None) is not None:
            plan.add(reranker.provider, reranker.model, "quality", held=held)
    return plan


def plan_latency(request: LatencyRequest) -> Plan:
    import json

    from ..study.quality import STUDY_DEFAULT_OPTIONS as OPTIONS

    study_dir = Path(request.study_dir)
    models = parse_models(request.models)
    options = {**OPTIONS, **request.options}
    manifest, items = load_prepared(study_dir)
    path = study_dir / PLAN
    if path.exists():
        timing = json.loads(path.read_text(encoding="utf-8"))
    else:
        timing = make_plan(items, request.samples, request.repeats, request.seed, latency_units(manifest))
    timed = {(c.benchmark, c.subset) for c, _ in select_items(manifest, items, request.benchmarks, study_dir)}
    calls, done = remaining_calls(study_dir, timing, models, timed)
    lookup = {(c.benchmark, c.subset, c.query_id): (c, texts) for c, texts in items}
    warmups = warmup_queries(lookup, timing)
    rerankers = _rerankers(models, Path(request.cache_dir), options)
    plan = Plan(ratios=ratios(request.cache_dir))
    warmed: set[tuple[str, str, str]] = set()
    for bench, subset, qid, _repeat, model in calls:
        reranker = rerankers[model.name]
        if (model.name, bench, subset) not in warmed:
            warmed.add((model.name, bench, subset))
            _plan_call(reranker, *warmups[(bench, subset)], plan, "latency warm-up")
        _plan_call(reranker, *lookup[(bench, subset, qid)], plan, "latency")
    held: dict[tuple[str, str, str], int] = {}
    for key in done:  # a plugin's calls timed under another version are not held: they are timed again
        held[key[:3]] = held.get(key[:3], 0) + 1
    for model in models:
        reranker = rerankers[model.name]
        if held.get(model.identity) and getattr(reranker, "plan", None) is not None:
            plan.add(reranker.provider, reranker.model, "latency", held=held[model.identity])
    plan.note("latency calls are strictly serial: the time is at least the sum of the calls, beyond the budgets")
    return plan

"""`answer --plan`: the generator and judge calls still to send (and the retrieval behind contexts not yet
built), from the data, the stored contexts and what answers.jsonl / verdicts.jsonl already hold. A generator or
judge on a server of your own (`ChatClient.self_hosted`) is counted but never priced: `prices.SELF_HOSTED`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..base.context import MethodContext
from ..base.errors import EvalsError
from ..base.usage import Usage
from ..benchmarks import LoadOptions, get_benchmark
from ..benchmarks.registry import resolve_subsets
from ..providers.batching import estimate_tokens
from ..providers.calibration import ratios
from ..providers.plan import Plan, Prior, text_prior
from ..vidore_paper import labels as L
from ..vidore_paper.annotations import PaperSubset, check_paper_benchmark, load_paper_subset
from ..vidore_paper.answer_request import AnswerRequest, parse_request, run_dir_of
from ..vidore_paper.calls import CallTask, completed
from ..vidore_paper.contexts import compute_contexts, context_parts, spec_of
from ..vidore_paper.judge import judge_request
from ..vidore_paper.llm import IMAGE_TOKEN_ESTIMATE, ChatClient, ModelSpec
from ..vidore_paper.prompts import load_prompt


def _count(
    plan: Plan,
    client: ChatClient,
    spec: ModelSpec,
    what: str,
    units: dict[str, float],
    prompt: str = "",
    extra: int = 0,
    extra_prior: Prior | None = None,
) -> None:
    """One call; its input is the prompt's text (first guess: `text_prior`), `extra` context tokens not built
    yet (guessed from the pages) and what stays at the throttle's estimate (images, an answer not written).
    A server of your own bills nothing: its call is counted with no price and no guess at what it would bill."""
    tokens = int(units["input_tokens"] + units["output_tokens"])
    if client.self_hosted:
        plan.add(
            spec.provider,
            spec.model,
            what,
            requests=1,
            items=1,
            tokens=tokens,
            settings=client.settings,
            self_hosted=True,
        )
        return
    if (spec.provider, spec.model) in plan.ratios or not prompt:
        input_tokens = plan.guess(spec.provider, spec.model, int(units["input_tokens"]))
    else:
        text = estimate_tokens(prompt)
        rest = int(units["input_tokens"]) - text - extra
        input_tokens = plan.guess(spec.provider, spec.model, text, text_prior([prompt])) + rest
        if extra:
            input_tokens += plan.guess(spec.provider, spec.model, extra, extra_prior)
    output = units["output_tokens"]
    plan.add(
        spec.provider,
        spec.model,
        what,
        requests=1,
        items=1,
        tokens=tokens,
        units={"input_tokens": input_tokens.point, "output_tokens": output},
        units_range=(
            {"input_tokens": input_tokens.low, "output_tokens": output},
            {"input_tokens": input_tokens.high, "output_tokens": output},
        ),
        settings=client.settings,
    )


def _prompt_text(system: str, parts: list[Any]) -> str:
    """The text `ChatClient.estimate_units` estimates (images aside)."""
    return system + "".join(part.text or "" for part in parts)


def _stored_contexts(path: Path, identity: dict[str, Any]) -> dict[str, list[list[Any]]] | None:
    if not path.exists():
        return None
    stored = json.loads(path.read_text(encoding="utf-8"))
    return stored["queries"] if stored.get("identity") == identity else None


def _plan_retrieval(paper: PaperSubset, request: AnswerRequest, plan: Plan) -> None:
    """The contexts are not built yet: count the retrieval that builds them (cache-aware, like `run --plan`)."""
    for kind, method in request.pipeline.streams():
        spec = spec_of(method, kind)
        ctx = MethodContext(
            benchmark=paper.subset.benchmark,
            cache_dir=Path(request.cache_dir),
            content=spec.content,
            options=dict(request.options),
            planning=True,
        )
        planner = getattr(spec.build(ctx), "plan", None)
        if planner is not None:
            planner(paper.subset, paper.queries, request.pipeline.top_k, plan)


def plan_answer(request: AnswerRequest) -> Plan:
    generators, judge = parse_request(request)
    decl = get_benchmark(request.benchmark)
    check_paper_benchmark(decl)
    answer_prompt = load_prompt("answer_no_context" if request.panel_mode else "answer")
    judge_prompt = load_prompt("judge")
    run_dir = run_dir_of(request, None if request.panel_mode else generators[0])
    answered, judged = completed(run_dir / "answers.jsonl"), completed(run_dir / "verdicts.jsonl")
    plan = Plan(ratios=ratios(request.cache_dir))
    clients = {spec: ChatClient(spec, request.options, request.generation) for spec in generators}
    judge_client = ChatClient(judge, request.options, request.judge_generation)
    content = "images" if request.pipeline.needs_images else "markdown"
    options = LoadOptions(content=content, revision=request.revision, cache_dir=Path(request.cache_dir))
    names = resolve_subsets(decl, request.subsets)
    plan.scope(len(names), "domains")
    for name in names:
        try:  # downloaded if not cached yet, as the answer run would (public data: free)
            paper = load_paper_subset(decl, name, options, request.language)
        except EvalsError as exc:
            plan.cannot_see(name, f"its data could not be loaded ({exc.one_line()})")
            continue
        identity = {
            "revision": paper.subset.source.get("revision"),
            "language": paper.language,
            "data_digest": paper.subset.data_digest(),
            "pipeline": request.pipeline.describe(),
        }
        contexts = _stored_contexts(run_dir / "contexts" / f"{name}.json", identity)
        if contexts is None and (request.pipeline.none or request.pipeline.oracle):
            contexts = compute_contexts(paper, request.pipeline, request.cache_dir, request.options, Usage())
        extra = 0  # estimated context tokens per prompt when the contexts are not built yet
        extra_prior = None
        if contexts is None:
            _plan_retrieval(paper, request, plan)
            mean = sum(estimate_tokens(p.text) for p in paper.subset.pages) / max(1, len(paper.subset.pages))
            extra_prior = None if content == "images" else text_prior(p.text for p in paper.subset.pages)
            per_page = IMAGE_TOKEN_ESTIMATE if content == "images" else mean
            extra = int(per_page * request.pipeline.top_k * len(request.pipeline.streams()))
            plan.note(f"{name}: contexts not built yet: generation input counts {extra:,} tokens of context a prompt")
        pages = paper.subset.page_by_id()
        for query in paper.queries:
            key = L.query_key(paper.name, query.id)
            parts = context_parts(contexts[query.id], pages) if contexts is not None else []
            system, user = answer_prompt.render({"question": query.text}, parts)
            for spec in generators:
                fields = {"subset": paper.name, "query_id": query.id, "query_key": key, "generator": spec.name}
                task = CallTask(spec, request.generation, system, user, fields)
                answer = answered.get(task.digest) if contexts is not None else None
                if answer is not None:
                    plan.add(spec.provider, spec.model, "generation", held=1, self_hosted=clients[spec].self_hosted)
                else:
                    units = clients[spec].estimate_units(system, user)
                    units["input_tokens"] += extra
                    prompt = _prompt_text(system, user)
                    _count(plan, clients[spec], spec, "generation", units, prompt, extra, extra_prior)
                reference = paper.answers.get(query.id, "")
                jsystem, juser = judge_request(judge_prompt, query.text, reference, answer["text"] if answer else "")
                if answer is not None:
                    jfields = {**fields, "answer_digest": task.digest}
                    verdict = CallTask(judge, request.judge_generation, jsystem, juser, jfields)
                    if verdict.digest in judged:
                        plan.add(judge.provider, judge.model, "judge", held=1, self_hosted=judge_client.self_hosted)
                        continue
                units = judge_client.estimate_units(jsystem, juser)
                if answer is None:  # the answer is not written yet: count the generator's expected output
                    units["input_tokens"] += clients[spec].estimate_units("", [])["output_tokens"]
                _count(plan, judge_client, judge, "judge", units, _prompt_text(jsystem, juser))
    return plan

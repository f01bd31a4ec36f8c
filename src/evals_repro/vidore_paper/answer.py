"""`evals-repro answer`: end-to-end answers from a retrieval pipeline, judged against the gold answer.

Two phases, each resumable on its own (calls.py): every query's generator call (answers.jsonl), then
the judge on every answer (verdicts.jsonl). With `--no-context --models a b c` the same two phases run
for a panel of models without context, and their verdicts define which queries are easy (labels.py);
a run with context reports accuracy overall, per domain and on the easy/hard split of those labels.

Layout under `--out-dir` (default results/vidore-v3-paper): `answer/<run name>/` per pipeline and
generator, `easy-hard/` for the panel; each holds manifest.json, contexts/, answers.jsonl,
verdicts.jsonl, result.json and table.md (the panel also labels.json). Scoring the verdicts and the
table of runs are in answer_results.py.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.io import atomic_write_json, atomic_write_text
from ..base.usage import Usage
from ..benchmarks import LoadOptions, get_benchmark
from ..benchmarks.registry import resolve_subsets
from . import labels as L
from .annotations import PaperSubset, check_paper_benchmark, load_paper_subset
from .answer_request import PANEL_DIR, AnswerRequest, checked_request, run_dir_of, safe_name
from .answer_results import accuracy, answer_table, collect_results, panel_scores, pipeline_scores
from .calls import CallOutcome, CallTask, execute, spend, spend_line
from .contexts import compute_contexts, context_parts, frozen_contexts
from .judge import judge_request, parse_verdict
from .llm import ModelSpec
from .prompts import load_prompt
from .rundir import record_dataset, run_directory

log = logging.getLogger(__name__)

__all__ = [  # the results side lives in answer_results.py; callers import it from here too
    "AnswerRequest",
    "PANEL_DIR",
    "accuracy",
    "answer_table",
    "collect_results",
    "run_answer",
    "run_dir_of",
    "safe_name",
]


def run_answer(request: AnswerRequest, echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Generate, judge and score; returns the result (also written to result.json and table.md)."""
    echo = echo or log.info  # no callback: the lines are log records (the CLI shows them)
    from ..runner.subset_result import package_versions

    generators, judge = checked_request(request)
    decl = get_benchmark(request.benchmark)
    check_paper_benchmark(decl)
    names = resolve_subsets(decl, request.subsets)
    answer_prompt = load_prompt("answer_no_context" if request.panel_mode else "answer")
    judge_prompt = load_prompt("judge")
    run_dir = run_dir_of(request, None if request.panel_mode else generators[0])
    config = {
        "benchmark": decl.name,
        "language": request.language or "native",
        "revision_override": request.revision,
        "pipeline": request.pipeline.describe(),
        **({} if request.panel_mode else {"generator": generators[0].name}),
        "generation": request.generation.describe(),
        "judge": judge.name,
        "judge_generation": request.judge_generation.describe(),
        "prompts": {answer_prompt.name: answer_prompt.digest, judge_prompt.name: judge_prompt.digest},
    }
    retrieval_usage = Usage()
    prompts = (answer_prompt, judge_prompt)
    with run_directory(run_dir, config, echo) as (manifest, outcome):
        papers: list[PaperSubset] = []
        done = _Done()
        content = "images" if request.pipeline.needs_images else "markdown"
        options = LoadOptions(content=content, revision=request.revision, cache_dir=Path(request.cache_dir))
        for name in names:  # one domain at a time: its page images are dropped before the next loads
            paper = load_paper_subset(decl, name, options, request.language)
            identity = {
                "revision": paper.subset.source.get("revision"),
                "language": paper.language,
                "data_digest": paper.subset.data_digest(),
            }
            record_dataset(run_dir, manifest, name, identity)
            contexts, reused = frozen_contexts(
                run_dir / "contexts" / f"{name}.json",
                {**identity, "pipeline": request.pipeline.describe()},
                lambda paper=paper: compute_contexts(
                    paper, request.pipeline, request.cache_dir, request.options, retrieval_usage
                ),
            )
            echo(f"{name}: {len(paper.queries)} {paper.language} queries, contexts {'reused' if reused else 'built'}")
            _answer_domain(paper, contexts, generators, judge, prompts, request, run_dir, done, echo)
            paper.subset.pages = []
            papers.append(paper)
        result: dict[str, Any] = {
            "kind": "answer-panel" if request.panel_mode else "answer",
            "benchmark": decl.name,
            "run": run_dir.name if not request.panel_mode else PANEL_DIR,
            "config": config,
            "datasets": {p.name: manifest["datasets"][p.name] for p in papers},
            "spend": {
                "generation": spend(done.used),
                "judge": spend(done.judged),
                "total": spend(done.used + done.judged),
                "this_session": spend(done.session),
                "reused_calls": done.reused,
            },
            "retrieval_usage": retrieval_usage.as_dict(),
            "retrieval_cost": _retrieval_cost(retrieval_usage),
            "versions": package_versions(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        rows = done.rows
        missing = sum(1 for r in rows if r["verdict"] == "missing")
        result["complete"] = missing == 0
        result["missing"] = missing
        result["judge_unparsed"] = sum(1 for r in rows if r["verdict"] == "unparsed")
        if request.panel_mode:
            panel_scores(result, rows, generators, run_dir, papers)
        else:
            pipeline_scores(result, rows, request.labels, request.out_dir, papers)
        atomic_write_json(run_dir / "result.json", result)
        atomic_write_text(run_dir / "table.md", answer_table([result]))
        outcome["status"] = "completed" if result["complete"] else "incomplete"
    _summarise(result, run_dir, echo)
    return result


@dataclass
class _Done:
    """What the domains answered so far: per-query rows, the records used, this session's calls."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    used: list[dict[str, Any]] = field(default_factory=list)
    judged: list[dict[str, Any]] = field(default_factory=list)
    session: list[dict[str, Any]] = field(default_factory=list)
    reused: int = 0


def _answer_domain(
    paper: PaperSubset,
    contexts: dict[str, list[list[Any]]],
    generators: list[ModelSpec],
    judge: ModelSpec,
    prompts,
    request: AnswerRequest,
    run_dir: Path,
    done: _Done,
    echo: Callable[[str], None],
) -> None:
    """One domain's two phases: every generator call, then the judge on every answer."""
    answer_prompt, judge_prompt = prompts
    pages = paper.subset.page_by_id()
    answer_tasks: dict[tuple[str, str], CallTask] = {}
    for query in paper.queries:
        key = L.query_key(paper.name, query.id)
        parts = context_parts(contexts[query.id], pages)
        system, user = answer_prompt.render({"question": query.text}, parts)
        for spec in generators:
            fields = {"subset": paper.name, "query_id": query.id, "query_key": key, "generator": spec.name}
            answer_tasks[(key, spec.name)] = CallTask(spec, request.generation, system, user, fields)
    answers = execute(
        run_dir / "answers.jsonl",
        list(answer_tasks.values()),
        request.options,
        request.workers,
        f"answers {paper.name}",
        echo,
    )
    judge_tasks: dict[tuple[str, str], CallTask] = {}
    questions = {L.query_key(paper.name, q.id): q for q in paper.queries}
    for (key, model), task in answer_tasks.items():
        answer = answers.records.get(task.digest)
        if answer is None:
            continue
        query = questions[key]
        system, user = judge_request(judge_prompt, query.text, paper.answers.get(query.id, ""), answer["text"])
        fields = {"subset": paper.name, "query_id": query.id, "query_key": key, "generator": model}
        fields["answer_digest"] = task.digest
        judge_tasks[(key, model)] = CallTask(judge, request.judge_generation, system, user, fields, _verdict)
    verdicts = execute(
        run_dir / "verdicts.jsonl",
        list(judge_tasks.values()),
        request.options,
        request.workers,
        f"judge {paper.name}",
        echo,
    )
    done.rows += _rows(paper, generators, judge_tasks, verdicts)
    done.used += [answers.records[t.digest] for t in answer_tasks.values() if t.digest in answers.records]
    done.judged += [verdicts.records[t.digest] for t in judge_tasks.values() if t.digest in verdicts.records]
    done.session += answers.session + verdicts.session
    done.reused += answers.reused + verdicts.reused


def _verdict(record: dict[str, Any]) -> None:
    correct = parse_verdict(record.get("text", ""))
    record["correct"] = correct
    record["verdict"] = "unparsed" if correct is None else ("correct" if correct else "incorrect")


def _rows(
    paper: PaperSubset,
    generators: list[ModelSpec],
    judge_tasks: dict[tuple[str, str], CallTask],
    verdicts: CallOutcome,
) -> list[dict[str, Any]]:
    """One row per query and generator: correct, incorrect, unparsed (counts as incorrect) or missing."""
    rows = []
    for query in paper.queries:
        key = L.query_key(paper.name, query.id)
        for spec in generators:
            task = judge_tasks.get((key, spec.name))
            record = verdicts.records.get(task.digest) if task else None
            verdict = record["verdict"] if record else "missing"
            rows.append(
                {
                    "key": key,
                    "subset": paper.name,
                    "query_id": query.id,
                    "generator": spec.name,
                    "verdict": verdict,
                    "correct": verdict == "correct",
                }
            )
    return rows


def _retrieval_cost(usage: Usage) -> dict[str, Any] | None:
    """What the contexts' retrieval billed this session (embeddings, reranks), priced, with the models it called on
    servers of your own (no price); None when nothing was billed and nothing self-hosted was called."""
    from ..providers.prices import cost_of

    units, served = usage.billed(), usage.served_labels()
    return cost_of(units, served).as_dict() if units or served else None


def _summarise(result: dict[str, Any], run_dir: Path, echo: Callable[[str], None]) -> None:
    from ..providers.prices import SELF_HOSTED, cost_text

    spent = result["spend"]
    if result["retrieval_usage"]:
        usage = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in result["retrieval_usage"].items())
        cost = result.get("retrieval_cost")
        if cost:
            shown = cost_text(cost["usd_priced"], cost["price_unknown"], bool(cost["self_hosted"]))
            usage += f", cost {shown}" + ("" if shown == SELF_HOSTED else f" (prices of {cost['prices_date']})")
        echo(f"retrieval spent: {usage}")
    echo(spend_line("spent this session", spent["this_session"]))
    echo(spend_line("run total (generation + judge)", spent["total"]))
    if result["judge_unparsed"]:
        echo(f"note: {result['judge_unparsed']} verdict(s) had no readable JSON verdict and count as incorrect")
    if not result["complete"]:
        echo(f"incomplete: {result['missing']} answer(s) or verdict(s) missing; rerun the same command to retry")
    echo(f"wrote {run_dir / 'result.json'} and {run_dir / 'table.md'}")

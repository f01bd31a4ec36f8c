"""`evals-repro answer`: end-to-end answers from a retrieval pipeline, judged against the gold answer.

Two phases, each resumable on its own (calls.py): every query's generator call (answers.jsonl), then
the judge on every answer (verdicts.jsonl). With `--no-context --models a b c` the same two phases run
for a panel of models without context, and their verdicts define which queries are easy (labels.py);
a run with context reports accuracy overall, per domain and on the easy/hard split of those labels.

Layout under `--out-dir` (default results/vidore-v3-paper): `answer/<run name>/` per pipeline and
generator, `easy-hard/` for the panel; each holds manifest.json, contexts/, answers.jsonl,
verdicts.jsonl, result.json and table.md (the panel also labels.json).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..benchmarks import LoadOptions, get_benchmark
from ..benchmarks.registry import resolve_subsets
from ..errors import UsageError
from ..io import atomic_write_json, atomic_write_text
from ..providers.keys import require_key
from ..usage import Usage
from . import labels as L
from .annotations import PaperSubset, check_paper_benchmark, load_paper_subset
from .calls import CallOutcome, CallTask, execute, spend, spend_line
from .contexts import Pipeline, compute_contexts, context_parts, frozen_contexts
from .judge import judge_request, parse_verdict
from .llm import GenerationSettings, ModelSpec, parse_model, require_keys
from .prompts import load_prompt
from .rundir import record_dataset, run_directory

log = logging.getLogger(__name__)

PANEL_DIR = "easy-hard"


@dataclass
class AnswerRequest:
    benchmark: str = "vidore-v3"
    subsets: list[str] | None = None
    language: str | None = None  # None: each domain's native language
    revision: str | None = None
    pipeline: Pipeline = field(default_factory=Pipeline)
    generator: str | None = None
    judge: str | None = None
    panel: list[str] = field(default_factory=list)  # --no-context --models ...
    generation: GenerationSettings = field(default_factory=GenerationSettings)
    judge_generation: GenerationSettings = field(default_factory=GenerationSettings)
    out_dir: Path = Path("results/vidore-v3-paper")
    run_name: str | None = None
    labels: Path | None = None  # default: <out-dir>/easy-hard/labels.json
    workers: int = 4
    cache_dir: Path = Path("cache")
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def panel_mode(self) -> bool:
        return self.pipeline.none


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+@=-]+", "_", text).strip("_") or "run"


def run_dir_of(request: AnswerRequest, generator: ModelSpec | None) -> Path:
    if request.panel_mode:
        return Path(request.out_dir) / PANEL_DIR
    name = request.run_name or f"{request.pipeline.label}__{generator.name if generator else ''}"
    return Path(request.out_dir) / "answer" / safe_name(name)


def _validate(request: AnswerRequest) -> tuple[list[ModelSpec], ModelSpec]:
    if request.workers < 1:
        raise UsageError(f"--workers {request.workers} must be at least 1", "use e.g. 4")
    if not request.judge:
        raise UsageError("--judge is required", "e.g. --judge openai:gpt-5.2 (the paper's judge)")
    request.pipeline.validate()
    if request.panel_mode:
        if request.generator or not request.panel:
            raise UsageError(
                "--no-context builds the easy/hard label with a panel: give --models, not --generator",
                "e.g. --no-context --models gemini:gemini-3-pro-preview openai:gpt-5.2",
            )
        generators = [parse_model(m, "--models") for m in request.panel]
    else:
        if request.panel:
            raise UsageError("--models goes with --no-context", "give one --generator for a pipeline run")
        if not request.generator:
            raise UsageError("--generator is required", "e.g. --generator gemini:gemini-3-pro-preview")
        generators = [parse_model(request.generator, "--generator")]
    return generators, parse_model(request.judge, "--judge")


def run_answer(request: AnswerRequest, echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Generate, judge and score; returns the result (also written to result.json and table.md)."""
    echo = echo or log.info  # no callback: the lines are log records (the CLI shows them)
    from ..evaluation import package_versions

    generators, judge = _validate(request)
    require_keys([*generators, judge])
    for variable in request.pipeline.key_variables():
        require_key(variable)
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
            "versions": package_versions(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        rows = done.rows
        missing = sum(1 for r in rows if r["verdict"] == "missing")
        result["complete"] = missing == 0
        result["missing"] = missing
        result["judge_unparsed"] = sum(1 for r in rows if r["verdict"] == "unparsed")
        if request.panel_mode:
            _panel_result(result, rows, generators, run_dir, papers)
        else:
            _pipeline_result(result, rows, request, papers)
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


def accuracy(rows: list[dict[str, Any]], domains: list[str]) -> dict[str, Any]:
    """Micro accuracy over judged queries, per domain, and the mean of the domain accuracies (macro)."""

    def block(subset_rows: list[dict[str, Any]]) -> dict[str, Any]:
        judged = [r for r in subset_rows if r["verdict"] != "missing"]
        correct = sum(r["correct"] for r in judged)
        return {
            "n": len(judged),
            "correct": correct,
            "accuracy": correct / len(judged) if judged else None,
            "missing": len(subset_rows) - len(judged),
        }

    per_domain = {d: block([r for r in rows if r["subset"] == d]) for d in domains}
    scored = [b["accuracy"] for b in per_domain.values() if b["accuracy"] is not None]
    return {
        "overall": block(rows),
        "macro": sum(scored) / len(scored) if scored else None,
        "domains": per_domain,
    }


def _pipeline_result(
    result: dict[str, Any], rows: list[dict[str, Any]], request: AnswerRequest, papers: list[PaperSubset]
) -> None:
    domains = [p.name for p in papers]
    path = Path(request.labels) if request.labels else Path(request.out_dir) / PANEL_DIR / L.LABELS
    stored = L.load_labels(path)
    by_key = (stored or {}).get("labels", {})
    for row in rows:
        row["label"] = (by_key.get(row["key"]) or {}).get("label")
    result["accuracy"] = {"all": accuracy(rows, domains)}
    if stored is None:
        result["labels"] = {
            "source": str(path),
            "note": "no easy/hard labels: build them once with `evals-repro answer --no-context --models ...`",
        }
    else:
        result["labels"] = {
            "source": str(path),
            "sha256": L.file_digest(path),
            "panel": stored.get("panel"),
            "judge": stored.get("judge"),
            "counts": L.counts({r["key"]: {"label": r["label"]} for r in rows}),
        }
        for label in ("easy", "hard"):
            result["accuracy"][label] = accuracy([r for r in rows if r["label"] == label], domains)
    result["queries"] = [[r["key"], r["verdict"], r.get("label")] for r in rows]


def _panel_result(
    result: dict[str, Any], rows: list[dict[str, Any]], generators: list[ModelSpec], run_dir: Path, papers
) -> None:
    from ..io import read_jsonl

    domains = [p.name for p in papers]
    panel = [g.name for g in generators]
    keys = [L.query_key(p.name, q.id) for p in papers for q in p.queries]
    labels = L.labels_from_verdicts(read_jsonl(run_dir / "verdicts.jsonl"), panel, keys)
    stored = {
        "panel": panel,
        "judge": result["config"]["judge"],
        "prompts": result["config"]["prompts"],
        "counts": L.counts(labels),
        "labels": labels,
    }
    atomic_write_json(run_dir / L.LABELS, stored)
    result["labels"] = {"path": str(run_dir / L.LABELS), "panel": panel, "counts": stored["counts"]}
    result["accuracy"] = {m: accuracy([r for r in rows if r["generator"] == m], domains) for m in panel}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}"


def answer_table(results: list[dict[str, Any]]) -> str:
    """Markdown, accuracy x100: one row per run (or panel model), domains then hard / easy / all (macro)."""
    domains: list[str] = []
    for result in results:
        for name in result.get("datasets", {}):
            if name not in domains:
                domains.append(name)
    lines = [
        "| run | " + " | ".join(domains) + " | hard | easy | all (mean of domains) | all (pooled) |",
        "|---|" + "---:|" * (len(domains) + 4),
    ]
    for result in results:
        if result["kind"] == "answer-panel":
            blocks = [(f"no context: {m}", acc, None) for m, acc in result["accuracy"].items()]
        else:
            acc = result["accuracy"]
            blocks = [(result["run"], acc["all"], acc)]
        for label, block, split in blocks:
            cells = [_pct(block["domains"].get(d, {}).get("accuracy")) for d in domains]
            hard = _pct(split["hard"]["macro"]) if split and "hard" in split else "-"
            easy = _pct(split["easy"]["macro"]) if split and "easy" in split else "-"
            lines.append(
                f"| {label} | "
                + " | ".join(cells)
                + f" | {hard} | {easy} | {_pct(block['macro'])} | {_pct(block['overall']['accuracy'])} |"
            )
    return "\n".join(lines) + "\n"


def _summarise(result: dict[str, Any], run_dir: Path, echo: Callable[[str], None]) -> None:
    spent = result["spend"]
    if result["retrieval_usage"]:
        usage = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in result["retrieval_usage"].items())
        echo(f"retrieval spent: {usage}")
    echo(spend_line("spent this session", spent["this_session"]))
    echo(spend_line("run total (generation + judge)", spent["total"]))
    if result["judge_unparsed"]:
        echo(f"note: {result['judge_unparsed']} verdict(s) had no readable JSON verdict and count as incorrect")
    if not result["complete"]:
        echo(f"incomplete: {result['missing']} answer(s) or verdict(s) missing; rerun the same command to retry")
    echo(f"wrote {run_dir / 'result.json'} and {run_dir / 'table.md'}")


def collect_results(out_dir: Path) -> list[dict[str, Any]]:
    """Every answer result under `out_dir` (the panel first, then pipeline runs by name)."""
    import json

    found = []
    panel = Path(out_dir) / PANEL_DIR / "result.json"
    if panel.exists():
        found.append(json.loads(panel.read_text(encoding="utf-8")))
    for path in sorted((Path(out_dir) / "answer").glob("*/result.json")):
        found.append(json.loads(path.read_text(encoding="utf-8")))
    if not found:
        raise UsageError(f"no answer results under {out_dir}", "run `evals-repro answer ...` first")
    return found

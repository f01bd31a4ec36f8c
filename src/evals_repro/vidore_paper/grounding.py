"""`grounding predict`: a generator answers with inline boxes over the query's annotated pages; the
boxes are scored against each annotator with the zone method of `agreement`, best annotator per query.

The candidate pages are the query's relevant pages only (qrels, grade descending): unlike the paper, which
also showed the pages its annotators saw and rejected, because those are not published. They are shown as images
numbered 1..N; the pinned prompt asks for `<bboxes image="N">[...]</bboxes>` in the model family's own
box convention (conventions.py: Gemini y-first on 0..1000, Qwen3-VL x-first on 0..1000, Qwen2.5-VL
resized-image pixels), which bboxes.py reads back, never failing on a malformed answer. Queries no
annotator drew a box for are not asked.

Every box, the annotators' and the model's, is cut to its page image before any pixel is counted;
both cuts are counted. Scoring (grounding_results.py) reports both readings of the paper's open
units: F1 per query pooled over its pages and per query-page pair; the same-page rate over pages
either side boxed and over pages the annotators boxed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import UsageError
from ..base.io import atomic_write_json, atomic_write_text
from ..benchmarks import LoadOptions, get_benchmark
from ..benchmarks.registry import resolve_subsets
from . import labels as L
from .annotations import PaperSubset, check_paper_benchmark, clip_to_pages, image_size, load_paper_subset
from .answer_request import safe_name
from .bboxes import parse_answer
from .calls import CallTask, execute, spend, spend_line
from .conventions import BoxConvention, choose_convention
from .grounding_results import PAIR_UNIT, QUERY_UNIT, grounding_table, mean_scores, page_rates, score_pairs, score_query
from .llm import GenerationSettings, parse_model, require_keys
from .prompts import load_prompt
from .render import Part, page_parts
from .rundir import record_dataset, run_directory
from .zones import Box, zone_area

__all__ = ["GroundingRequest", "grounding_table", "run_grounding", "score_pairs", "score_query"]

log = logging.getLogger(__name__)

# What the paper reports for visual grounding (bounding-box F1 against the human annotators).
PUBLISHED: dict[str, Any] = {
    "human_f1": 0.602,
    "models": {"Qwen3-VL": 0.089, "Gemini 3 Pro": 0.065},
    "source": "ViDoRe V3, arXiv:2601.08620 (visual grounding)",
}


@dataclass
class GroundingRequest:
    benchmark: str = "vidore-v3"
    subsets: list[str] | None = None
    language: str | None = None
    revision: str | None = None
    generator: str | None = None
    generation: GenerationSettings = field(default_factory=GenerationSettings)
    box_convention: str | None = None  # None/"auto": from the generator's name (conventions.py)
    box_scale: float | None = None  # the x-first grid's extent (0 = page pixels); implies convention "xyxy"
    min_pixels: int | None = None  # qwen2.5-vl: the server's image-processor limits, if not the defaults
    max_pixels: int | None = None
    out_dir: Path = Path("results/vidore-v3-paper")
    run_name: str | None = None
    workers: int = 4
    cache_dir: Path = Path("cache")
    options: dict[str, Any] = field(default_factory=dict)


def run_grounding(request: GroundingRequest, echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    echo = echo or log.info  # no callback: the lines are log records (the CLI shows them)
    from ..runner.subset_result import package_versions

    if request.workers < 1:
        raise UsageError(f"--workers {request.workers} must be at least 1", "use e.g. 4")
    if not request.generator:
        raise UsageError("--generator is required", "e.g. --generator gemini:gemini-3-pro-preview")
    spec = parse_model(request.generator, "--generator")
    convention, chosen_by = choose_convention(
        spec.name, request.box_convention, request.box_scale, request.min_pixels, request.max_pixels
    )
    require_keys([spec])
    decl = get_benchmark(request.benchmark)
    check_paper_benchmark(decl)
    names = resolve_subsets(decl, request.subsets)
    prompt = load_prompt(convention.prompt)
    run_dir = Path(request.out_dir) / "grounding" / safe_name(request.run_name or spec.name)
    config = {
        "benchmark": decl.name,
        "language": request.language or "native",
        "revision_override": request.revision,
        "generator": spec.name,
        "generation": request.generation.describe(),
        "box_convention": convention.as_record(chosen_by),
        "prompts": {prompt.name: prompt.digest},
    }
    with run_directory(run_dir, config, echo) as (manifest, outcome):
        options = LoadOptions(content="images", revision=request.revision, cache_dir=Path(request.cache_dir))
        papers: list[PaperSubset] = []
        tally = _Tally()
        for name in names:  # one domain at a time: its page images are dropped before the next loads
            paper = load_paper_subset(decl, name, options, request.language)
            identity = {
                "revision": paper.subset.source.get("revision"),
                "language": paper.language,
                "data_digest": paper.subset.data_digest(),
            }
            record_dataset(run_dir, manifest, name, identity)
            cuts = clip_to_pages(paper).as_record()
            tally.human_boxes = {k: tally.human_boxes.get(k, 0) + v for k, v in cuts.items()}
            _ground_domain(paper, spec, prompt, convention, request, run_dir, tally, echo)
            paper.subset.pages = []
            papers.append(paper)
        rows, used = tally.rows, tally.used
        missing = sum(1 for r in rows if r["status"] == "missing")
        result: dict[str, Any] = {
            "kind": "grounding",
            "benchmark": decl.name,
            "run": run_dir.name,
            "config": config,
            "datasets": {p.name: manifest["datasets"][p.name] for p in papers},
            "scores": mean_scores(rows, [p.name for p in papers], QUERY_UNIT, "queries"),
            "scores_per_pair": mean_scores(tally.pairs, [p.name for p in papers], PAIR_UNIT, "pairs"),
            "pages": page_rates(tally.pages),
            "parse": {status: tally.parse.get(status, 0) for status in ("ok", "no_boxes", "malformed")},
            "queries_without_human_boxes": tally.unasked,
            "human_boxes": tally.human_boxes,  # every box of the evaluated queries; cut = reached past its page
            "human_boxes_outside_image": tally.human_boxes.get("cut", 0),
            "model_boxes_outside_image": tally.model_outside,
            "published": PUBLISHED,
            "spend": {"total": spend(used), "this_session": spend(tally.session), "reused_calls": tally.reused},
            "queries": [
                [r["key"], r["status"], r.get("annotator"), _round(r.get("iou")), _round(r.get("f1"))] for r in rows
            ],
            "pairs": [
                [r["key"], r["page"], r["status"], r.get("annotator"), _round(r.get("iou")), _round(r.get("f1"))]
                for r in tally.pairs
            ],
            "complete": missing == 0,
            "missing": missing,
            "versions": package_versions(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        atomic_write_json(run_dir / "result.json", result)
        atomic_write_text(run_dir / "table.md", grounding_table(result))
        outcome["status"] = "completed" if result["complete"] else "incomplete"
    echo(spend_line("spent this session", result["spend"]["this_session"]))
    echo(spend_line("run total", result["spend"]["total"]))
    if result["human_boxes_outside_image"]:
        echo(f"note: {result['human_boxes_outside_image']} human box(es) reached past their page image; cut to it")
    if tally.model_outside:
        echo(f"note: {tally.model_outside} model box(es) reached past their page image; cut to it")
    if missing:
        echo(f"incomplete: {missing} grounding call(s) missing; rerun the same command to retry")
    echo(f"wrote {run_dir / 'result.json'} and {run_dir / 'table.md'}")
    return result


@dataclass
class _Tally:
    """What the domains gave so far: per-query rows, page-level counts, parse outcomes, calls."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)  # one per query-page pair the annotators boxed
    used: list[dict[str, Any]] = field(default_factory=list)
    session: list[dict[str, Any]] = field(default_factory=list)
    pages: dict[str, int] = field(default_factory=lambda: {"both": 0, "model_only": 0, "human_only": 0})
    parse: dict[str, int] = field(default_factory=dict)
    unasked: int = 0
    human_boxes: dict[str, int] = field(default_factory=dict)  # annotations.BoxCuts, summed over domains
    model_outside: int = 0  # model boxes cut to their page image (clipped on the model's grid)
    reused: int = 0


def _ground_domain(
    paper: PaperSubset,
    spec,
    prompt,
    convention: BoxConvention,
    request: GroundingRequest,
    run_dir: Path,
    tally: _Tally,
    echo: Callable[[str], None],
) -> None:
    """Ask for every query of one domain that annotators boxed, then score what came back."""
    scale = f"{convention.scale:g}"
    pages = paper.subset.page_by_id()
    sizes: dict[str, tuple[int, int]] = dict(paper.page_sizes)

    def size_of(page_id: str) -> tuple[int, int]:
        if page_id not in sizes:
            sizes[page_id] = image_size(pages[page_id].image or b"")
        return sizes[page_id]

    def read(text: str, candidates: list[str]):
        grids = {n: convention.grid_size(size_of(page_id)) for n, page_id in enumerate(candidates, 1)}
        return parse_answer(text, len(candidates), convention.scale, convention.order, grids)

    tasks: dict[str, tuple[str, list[str], CallTask]] = {}
    for query in paper.queries:
        candidates = paper.relevant_pages(query.id)
        if not any(zone_area(b) for p in candidates for b in paper.zones(query.id, p).values()):
            tally.unasked += 1
            continue
        parts: list[Part] = []
        for n, page_id in enumerate(candidates, 1):
            width, height = size_of(page_id)
            label = f"Image {n} ({width} x {height} pixels)" if convention.states_size else f"Image {n}"
            parts += page_parts(pages[page_id], "image", label)
        values = {"question": query.text, "n_images": str(len(candidates)), "box_scale": scale}
        system, user = prompt.render(values, parts)
        key = L.query_key(paper.name, query.id)
        fields = {"subset": paper.name, "query_id": query.id, "query_key": key, "pages": candidates}

        def finish(record: dict[str, Any], candidates=candidates) -> None:
            parsed = read(record.get("text", ""), candidates)
            record["answer_text"] = parsed.text
            record["parse"] = parsed.as_record()

        tasks[key] = (query.id, candidates, CallTask(spec, request.generation, system, user, fields, finish))
    calls = execute(
        run_dir / "grounding.jsonl",
        [task for *_, task in tasks.values()],
        request.options,
        request.workers,
        f"grounding {paper.name}",
        echo,
    )
    tally.session += calls.session
    tally.reused += calls.reused
    for key, (query_id, candidates, task) in tasks.items():
        record = calls.records.get(task.digest)
        human = {p: paper.zones(query_id, p) for p in candidates}
        if record is None:  # the query and its pairs are missing: a rerun retries the call
            tally.rows.append({"key": key, "subset": paper.name, "status": "missing"})
            boxed = [p for p, zones in human.items() if any(zone_area(b) for b in zones.values())]
            tally.pairs += [{"key": key, "subset": paper.name, "status": "missing", "page": p} for p in boxed]
            continue
        tally.used.append(record)
        parsed = read(record.get("text", ""), candidates)
        tally.parse[parsed.status] = tally.parse.get(parsed.status, 0) + 1
        tally.model_outside += parsed.clipped
        model: dict[str, list[Box]] = {}
        for image_number, boxes in parsed.boxes.items():
            page_id = candidates[image_number - 1]
            # The parser cut each box to the model's grid over this image, so it maps inside the page.
            model[page_id] = [convention.to_page(b, size_of(page_id)) for b in boxes]
        score = score_query(model, human)
        assert score is not None  # only queries with human boxes were asked
        human_pages = {p for p, zones in human.items() if any(zone_area(b) for b in zones.values())}
        model_pages = {p for p, boxes in model.items() if zone_area(boxes)}
        tally.pages["both"] += len(human_pages & model_pages)
        tally.pages["model_only"] += len(model_pages - human_pages)
        tally.pages["human_only"] += len(human_pages - model_pages)
        row = {"key": key, "subset": paper.name, "status": parsed.status, "boxes": parsed.n_boxes}
        tally.rows.append({**row, "issues": len(parsed.issues), **score})
        for pair in score_pairs(model, human):
            tally.pairs.append({"key": key, "subset": paper.name, "status": parsed.status, **pair})


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)

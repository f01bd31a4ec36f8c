"""`grounding predict`: a generator answers with inline boxes over the query's annotated pages; the
boxes are scored against each annotator with the zone method of `agreement`, best annotator per query.

The candidate pages are the query's relevant pages only (qrels, grade descending): unlike the paper, which
also showed the pages its annotators saw and rejected, because those are not published. They are shown as images
numbered 1..N; the pinned prompt asks for `<bboxes image="N">[x1, y1, x2, y2]</bboxes>` on a 0..scale
grid (bboxes.py parses it, never failing on a malformed answer). Queries no annotator drew a box for
are not asked.

Per query and annotator, the model's and the annotator's zones are pooled over the candidate pages
(pixel counts summed), giving one IoU and one F1; the query keeps the annotator with the best F1
(ties: IoU). Page level: pages with a model box and a human box, human pages without a model box,
model pages without a human box.
"""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..benchmarks import LoadOptions, get_benchmark
from ..benchmarks.registry import resolve_subsets
from ..errors import UsageError
from ..io import atomic_write_json, atomic_write_text
from ..metrics.protocol import running_mean
from . import labels as L
from .annotations import PaperSubset, check_paper_benchmark, load_paper_subset
from .answer import safe_name
from .bboxes import parse_answer
from .calls import CallTask, execute, spend, spend_line
from .llm import GenerationSettings, parse_model, require_keys
from .prompts import load_prompt
from .render import page_parts
from .rundir import record_dataset, run_directory
from .zones import EMPTY, Box, overlap, zone_area

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
    box_scale: float = 1000.0  # 0 = page pixels
    out_dir: Path = Path("results/vidore-v3-paper")
    run_name: str | None = None
    workers: int = 4
    cache_dir: Path = Path("cache")
    options: dict[str, Any] = field(default_factory=dict)


def image_size(data: bytes) -> tuple[int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.size


def to_pixels(coords: tuple[float, float, float, float], size: tuple[int, int], scale: float) -> Box:
    x1, y1, x2, y2 = coords
    if scale > 0:
        width, height = size
        x1, x2 = x1 / scale * width, x2 / scale * width
        y1, y2 = y1 / scale * height, y2 / scale * height
    return Box.of(x1, x2, y1, y2)


def score_query(model: dict[str, list[Box]], human: dict[str, dict[str, list[Box]]]) -> dict[str, Any] | None:
    """Best-annotator IoU/F1 of a model's zones against each annotator's, pooled over the pages."""
    annotators = sorted({a for zones in human.values() for a, boxes in zones.items() if zone_area(boxes) > 0})
    if not annotators:
        return None
    pages = sorted(set(model) | set(human))
    best: tuple[float, float, str] | None = None
    for annotator in annotators:
        total = EMPTY
        for page in pages:
            total = total + overlap(model.get(page, []), human.get(page, {}).get(annotator, []))
        candidate = (total.f1, total.iou, annotator)
        if best is None or candidate[:2] > best[:2]:
            best = candidate
    assert best is not None
    return {"f1": best[0], "iou": best[1], "annotator": best[2], "annotators": len(annotators)}


def run_grounding(request: GroundingRequest, echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    echo = echo or log.info  # no callback: the lines are log records (the CLI shows them)
    from ..evaluation import package_versions

    if request.workers < 1:
        raise UsageError(f"--workers {request.workers} must be at least 1", "use e.g. 4")
    if request.box_scale < 0:
        raise UsageError(f"--box-scale {request.box_scale:g} is negative", "use 1000 (or 0 for page pixels)")
    if not request.generator:
        raise UsageError("--generator is required", "e.g. --generator gemini:gemini-3-pro-preview")
    spec = parse_model(request.generator, "--generator")
    require_keys([spec])
    decl = get_benchmark(request.benchmark)
    check_paper_benchmark(decl)
    names = resolve_subsets(decl, request.subsets)
    prompt = load_prompt("grounding")
    run_dir = Path(request.out_dir) / "grounding" / safe_name(request.run_name or spec.name)
    config = {
        "benchmark": decl.name,
        "language": request.language or "native",
        "revision_override": request.revision,
        "generator": spec.name,
        "generation": request.generation.describe(),
        "box_scale": request.box_scale,
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
            _ground_domain(paper, spec, prompt, request, run_dir, tally, echo)
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
            "scores": _scores(rows, [p.name for p in papers]),
            "pages": _page_rates(tally.pages),
            "parse": {status: tally.parse.get(status, 0) for status in ("ok", "no_boxes", "malformed")},
            "queries_without_human_boxes": tally.unasked,
            "human_boxes_outside_image": tally.outside,
            "published": PUBLISHED,
            "spend": {"total": spend(used), "this_session": spend(tally.session), "reused_calls": tally.reused},
            "queries": [
                [r["key"], r["status"], r.get("annotator"), _round(r.get("iou")), _round(r.get("f1"))] for r in rows
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
    if tally.outside:
        echo(f"note: {tally.outside} human box(es) reach past their page image (are boxes in page pixels?)")
    if missing:
        echo(f"incomplete: {missing} grounding call(s) missing; rerun the same command to retry")
    echo(f"wrote {run_dir / 'result.json'} and {run_dir / 'table.md'}")
    return result


@dataclass
class _Tally:
    """What the domains gave so far: per-query rows, page-level counts, parse outcomes, calls."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    used: list[dict[str, Any]] = field(default_factory=list)
    session: list[dict[str, Any]] = field(default_factory=list)
    pages: dict[str, int] = field(default_factory=lambda: {"both": 0, "model_only": 0, "human_only": 0})
    parse: dict[str, int] = field(default_factory=dict)
    unasked: int = 0
    outside: int = 0
    reused: int = 0


def _ground_domain(
    paper: PaperSubset,
    spec,
    prompt,
    request: GroundingRequest,
    run_dir: Path,
    tally: _Tally,
    echo: Callable[[str], None],
) -> None:
    """Ask for every query of one domain that annotators boxed, then score what came back."""
    scale = f"{request.box_scale:g}"
    pages = paper.subset.page_by_id()
    tasks: dict[str, tuple[str, list[str], CallTask]] = {}
    for query in paper.queries:
        candidates = paper.relevant_pages(query.id)
        if not any(zone_area(b) for p in candidates for b in paper.zones(query.id, p).values()):
            tally.unasked += 1
            continue
        parts = [
            part
            for n, page_id in enumerate(candidates, 1)
            for part in page_parts(pages[page_id], "image", f"Image {n}")
        ]
        values = {"question": query.text, "n_images": str(len(candidates)), "box_scale": scale}
        system, user = prompt.render(values, parts)
        key = L.query_key(paper.name, query.id)
        fields = {"subset": paper.name, "query_id": query.id, "query_key": key, "pages": candidates}

        def finish(record: dict[str, Any], n=len(candidates)) -> None:
            parsed = parse_answer(record.get("text", ""), n, request.box_scale)
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
        if record is None:
            tally.rows.append({"key": key, "subset": paper.name, "status": "missing"})
            continue
        tally.used.append(record)
        parsed = parse_answer(record.get("text", ""), len(candidates), request.box_scale)
        tally.parse[parsed.status] = tally.parse.get(parsed.status, 0) + 1
        model: dict[str, list[Box]] = {}
        for image_number, boxes in parsed.boxes.items():
            page_id = candidates[image_number - 1]
            size = image_size(pages[page_id].image or b"")
            model[page_id] = [to_pixels(b, size, request.box_scale) for b in boxes]
        human = {p: paper.zones(query_id, p) for p in candidates}
        for page_id, zones in human.items():
            width, height = image_size(pages[page_id].image or b"")
            tally.outside += sum(1 for bs in zones.values() for b in bs if b.x2 > width or b.y2 > height)
        score = score_query(model, human)
        assert score is not None  # only queries with human boxes were asked
        human_pages = {p for p, zones in human.items() if any(zone_area(b) for b in zones.values())}
        model_pages = {p for p, boxes in model.items() if zone_area(boxes)}
        tally.pages["both"] += len(human_pages & model_pages)
        tally.pages["model_only"] += len(model_pages - human_pages)
        tally.pages["human_only"] += len(human_pages - model_pages)
        row = {"key": key, "subset": paper.name, "status": parsed.status, "boxes": parsed.n_boxes}
        tally.rows.append({**row, "issues": len(parsed.issues), **score})


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _scores(rows: list[dict[str, Any]], domains: list[str]) -> dict[str, Any]:
    def block(subset_rows: list[dict[str, Any]]) -> dict[str, Any]:
        scored = [r for r in subset_rows if r["status"] != "missing"]
        n = len(scored)
        return {
            "queries": n,
            "iou": running_mean(r["iou"] for r in scored) if n else None,
            "f1": running_mean(r["f1"] for r in scored) if n else None,
            "missing": len(subset_rows) - n,
        }

    per_domain = {d: block([r for r in rows if r["subset"] == d]) for d in domains}
    scored = [b for b in per_domain.values() if b["queries"]]
    return {
        "overall": block(rows),
        "macro": {
            "iou": running_mean(b["iou"] for b in scored) if scored else None,
            "f1": running_mean(b["f1"] for b in scored) if scored else None,
        },
        "domains": per_domain,
    }


def _page_rates(counts: dict[str, int]) -> dict[str, Any]:
    both, model_only, human_only = counts["both"], counts["model_only"], counts["human_only"]

    def ratio(a: int, b: int) -> float | None:
        return a / b if b else None

    return {
        **counts,
        "same_page": ratio(both, both + model_only + human_only),
        "human_pages_without_model_box": ratio(human_only, both + human_only),
        "model_pages_without_human_box": ratio(model_only, both + model_only),
    }


def _fmt(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value * 100:.1f}%" if pct else f"{value:.3f}"


def grounding_table(result: dict[str, Any]) -> str:
    scores, pages, published = result["scores"], result["pages"], result["published"]
    lines = [
        f"## Visual grounding: {result['config']['generator']} ({result['benchmark']})",
        "",
        "| domain | queries | IoU | F1 |",
        "|---|---:|---:|---:|",
    ]
    for name, block in scores["domains"].items():
        lines.append(f"| {name} | {block['queries']} | {_fmt(block['iou'])} | {_fmt(block['f1'])} |")
    overall, macro = scores["overall"], scores["macro"]
    lines += [
        f"| all queries pooled | {overall['queries']} | {_fmt(overall['iou'])} | {_fmt(overall['f1'])} |",
        f"| mean of domains | | {_fmt(macro['iou'])} | {_fmt(macro['f1'])} |",
        f"| paper: human annotators | | | {published['human_f1']:.3f} |",
        *(f"| paper: {model} | | | {f1:.3f} |" for model, f1 in published["models"].items()),
        "",
        f"Pages: {pages['both']} with both a model and a human box (same page {_fmt(pages['same_page'], True)} of "
        f"pages boxed by either); human pages without a model box "
        f"{_fmt(pages['human_pages_without_model_box'], True)}; model pages without a human box "
        f"{_fmt(pages['model_pages_without_human_box'], True)}.",
        f"Answers: {result['parse']['ok']} well-formed, {result['parse']['no_boxes']} without boxes, "
        f"{result['parse']['malformed']} malformed (recorded, scored on what parsed).",
    ]
    return "\n".join(lines) + "\n"

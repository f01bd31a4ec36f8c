"""`grounding agreement`: how much ViDoRe v3's annotators agree on where the evidence is (offline).

Per query-page pair with two or three annotators who drew boxes: each annotator's boxes, cut to the
page image (pixels off the page do not exist; the cut boxes are counted), merge into one zone; zones
are compared pixel-wise (IoU, F1 = Dice); with three annotators the three pairwise values are averaged.
A pair with one annotator (or none) is counted but not scored. Per modality, zones hold only that
modality's boxes and a pair is scored when two annotators drew boxes of it.

Aggregates: per domain, the mean over its pairs; `overall`, the mean over all pairs pooled; `macro`,
the mean of the domain means. Each question is counted once, in one language (native by default).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.io import atomic_write_json, atomic_write_text
from ..base.progress import progress_bar
from ..benchmarks import LoadOptions, get_benchmark
from ..benchmarks.registry import resolve_subsets
from ..metrics.protocol import running_mean
from .annotations import PaperSubset, clip_to_pages, load_paper_subset
from .zones import pairwise_agreement, zone_area

log = logging.getLogger(__name__)

RESULT_NAME = "grounding-agreement"
# What the paper states: mean bounding-box agreement over its 10 datasets (8 public, 2 private).
# Source: arXiv:2601.08620 (ViDoRe V3); the grounding section compares models with the human F1 of 0.602.
PUBLISHED_IOU, PUBLISHED_F1 = 0.50, 0.60
PUBLISHED: dict[str, Any] = {
    "scope": "10 datasets (8 public + 2 private hold-out)",
    "iou": PUBLISHED_IOU,
    "f1": PUBLISHED_F1,
    "source": "ViDoRe V3, arXiv:2601.08620 (inter-annotator bounding-box agreement; human F1 0.602)",
}


@dataclass
class AgreementRequest:
    benchmark: str = "vidore-v3"
    subsets: list[str] | None = None
    language: str | None = None  # None: each subset's native language
    revision: str | None = None
    out_dir: Path = Path("results/vidore-v3-paper")
    cache_dir: Path = Path("cache")


@dataclass
class _Scores:
    iou: list[float] = field(default_factory=list)
    f1: list[float] = field(default_factory=list)

    def add(self, iou: float, f1: float) -> None:
        self.iou.append(iou)
        self.f1.append(f1)

    def extend(self, other: _Scores) -> None:
        self.iou.extend(other.iou)
        self.f1.extend(other.f1)

    def block(self) -> dict[str, Any]:
        n = len(self.iou)
        return {"pairs": n, "iou": running_mean(self.iou) if n else None, "f1": running_mean(self.f1) if n else None}


def subset_agreement(paper: PaperSubset) -> tuple[dict[str, Any], _Scores, dict[str, _Scores]]:
    """The subset's result block, its scored pairs and its per-modality scores (boxes cut to their pages)."""
    cuts = clip_to_pages(paper)
    scores, by_modality = _Scores(), dict[str, _Scores]()
    annotator_counts: dict[str, int] = {}
    pairs: list[list[Any]] = []
    single = unboxed = 0
    for query in paper.queries:
        for page_id in paper.relevant_pages(query.id):
            zones = paper.zones(query.id, page_id)
            agreement = pairwise_agreement(zones)
            if agreement is None:  # fewer than two annotators left a box on the page (boxes cut to it)
                if any(zone_area(boxes) for boxes in zones.values()):
                    single += 1
                else:
                    unboxed += 1
                continue
            scores.add(agreement.iou, agreement.f1)
            key = str(agreement.annotators)
            annotator_counts[key] = annotator_counts.get(key, 0) + 1
            pairs.append([query.id, page_id, agreement.annotators, round(agreement.iou, 6), round(agreement.f1, 6)])
            modalities = {b.modality for b in paper.boxes.get(query.id, {}).get(page_id, [])}
            for modality in sorted(modalities):
                per = pairwise_agreement(paper.zones(query.id, page_id, modality))
                if per is not None:
                    by_modality.setdefault(modality, _Scores()).add(per.iou, per.f1)
    block = {
        "revision": paper.subset.source.get("revision"),
        "language": paper.language,
        "queries": len(paper.queries),
        **scores.block(),
        "pairs_by_annotators": dict(sorted(annotator_counts.items())),
        "single_annotator_pairs": single,
        "pairs_without_boxes": unboxed,
        "unaligned_modality_rows": paper.unaligned_modality_rows,
        "human_boxes": cuts.as_record(),  # cut: reached past the page image (any edge); emptied: wholly off it
        "modalities": {m: s.block() for m, s in sorted(by_modality.items())},
        "scored_pairs": pairs,  # [query id, page id, annotators, IoU, F1]
    }
    return block, scores, by_modality


def run_agreement(request: AgreementRequest, echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    echo = echo or log.info  # no callback: the lines are log records (the CLI shows them)
    from ..runner.subset_result import package_versions

    decl = get_benchmark(request.benchmark)
    names = resolve_subsets(decl, request.subsets)
    options = LoadOptions(revision=request.revision, cache_dir=Path(request.cache_dir))
    blocks: dict[str, Any] = {}
    pooled, pooled_modality = _Scores(), dict[str, _Scores]()
    with progress_bar("grounding agreement", len(names)) as bar:
        for name in names:
            paper = load_paper_subset(decl, name, options, request.language)
            block, scores, by_modality = subset_agreement(paper)
            blocks[name] = block
            pooled.extend(scores)
            for modality, s in by_modality.items():
                pooled_modality.setdefault(modality, _Scores()).extend(s)
            echo(f"{name}: {block['pairs']} scored pairs, IoU {_fmt(block['iou'])}, F1 {_fmt(block['f1'])}")
            bar.advance()
    scored = [b for b in blocks.values() if b["pairs"]]
    macro = {
        "subsets": len(scored),
        "iou": running_mean(b["iou"] for b in scored) if scored else None,
        "f1": running_mean(b["f1"] for b in scored) if scored else None,
    }
    overall = pooled.block()
    cut = {k: sum(b["human_boxes"][k] for b in blocks.values()) for k in ("boxes", "cut", "emptied")}
    if cut["cut"]:
        echo(f"note: {cut['cut']} of {cut['boxes']} annotator box(es) reached past their page image; cut to it")
    result = {
        "kind": RESULT_NAME,
        "benchmark": decl.name,
        "config": {
            "subsets": names,
            "language": request.language or "native",
            "revision_override": request.revision,
            "method": "per annotator: union of boxes cut to the page image; pixel IoU and F1 (Dice); "
            "mean over annotator pairs",
        },
        "human_boxes": cut,
        "subsets": blocks,
        "overall": overall,
        "macro": macro,
        "modalities": {m: s.block() for m, s in sorted(pooled_modality.items())},
        "published": PUBLISHED,
        "comparison": {
            "note": "the paper's figure covers 10 datasets, two of them private; this run covers "
            f"{len(scored)} public domain(s)",
            "delta_macro_iou": _delta(macro["iou"], PUBLISHED_IOU),
            "delta_macro_f1": _delta(macro["f1"], PUBLISHED_F1),
        },
        "versions": package_versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "complete": True,
    }
    out = Path(request.out_dir)
    atomic_write_json(out / f"{RESULT_NAME}.json", result)
    atomic_write_text(out / f"{RESULT_NAME}.md", agreement_table(result))
    return result


def _delta(value: float | None, reference: float) -> float | None:
    return None if value is None else round(value - reference, 4)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def agreement_table(result: dict[str, Any]) -> str:
    """Markdown: domains x (scored pairs, 2/3 annotators, IoU, F1), then modalities."""
    lines = [
        f"## Bounding-box agreement between annotators ({result['benchmark']})",
        "",
        "| domain | scored pairs | 2 / 3 annotators | IoU | F1 |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, block in result["subsets"].items():
        counts = block["pairs_by_annotators"]
        lines.append(
            f"| {name} | {block['pairs']} | {counts.get('2', 0)} / {counts.get('3', 0)} "
            f"| {_fmt(block['iou'])} | {_fmt(block['f1'])} |"
        )
    overall, macro, published = result["overall"], result["macro"], result["published"]
    lines += [
        f"| all pairs pooled | {overall['pairs']} | | {_fmt(overall['iou'])} | {_fmt(overall['f1'])} |",
        f"| mean of {macro['subsets']} domains | | | {_fmt(macro['iou'])} | {_fmt(macro['f1'])} |",
        f"| paper, {published['scope']} | | | {published['iou']:.2f} | {published['f1']:.2f} |",
        "",
        "| modality | scored pairs | IoU | F1 |",
        "|---|---:|---:|---:|",
    ]
    for modality, block in result["modalities"].items():
        lines.append(f"| {modality} | {block['pairs']} | {_fmt(block['iou'])} | {_fmt(block['f1'])} |")
    boxes = result["human_boxes"]
    lines += [
        "",
        f"Boxes cut to their page image: {boxes['cut']} of {boxes['boxes']} ({boxes['emptied']} wholly off it).",
    ]
    return "\n".join(lines) + "\n"

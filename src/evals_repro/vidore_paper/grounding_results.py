"""How `grounding predict` scores model boxes against the annotators', and its result table.

The paper leaves two units open, so both readings are reported, each labelled:
- F1 (and IoU) per query, pixels pooled over the query's candidate pages (`scores`), or per
  query-page pair the annotators boxed (`scores_per_pair`: the unit of the annotators' own
  agreement; a page only the model boxed is no pair, the page rates count it);
- the "same page" rate over pages either side boxed, or over pages the annotators boxed.
Either way each unit keeps its best-matching annotator (highest F1, then IoU). Every box was cut to its
page image before it reaches here (annotations.clip_to_pages, grounding's model boxes).
"""

from __future__ import annotations

from typing import Any

from ..metrics.protocol import running_mean
from .zones import EMPTY, Box, Overlap, overlap, zone_area

QUERY_UNIT = "query: pixels pooled over its candidate pages"
PAIR_UNIT = "query-page pair the annotators boxed"
SAME_PAGE_EITHER = "same_page_of_pages_either_boxed"
SAME_PAGE_HUMAN = "same_page_of_pages_humans_boxed"


def _best(candidates: dict[str, Overlap]) -> tuple[float, float, str]:
    """(F1, IoU, annotator) of the best annotator: F1 first, IoU on a tie, then the first name."""
    best: tuple[float, float, str] | None = None
    for annotator in sorted(candidates):
        total = candidates[annotator]
        if best is None or (total.f1, total.iou) > best[:2]:
            best = (total.f1, total.iou, annotator)
    assert best is not None
    return best


def score_query(model: dict[str, list[Box]], human: dict[str, dict[str, list[Box]]]) -> dict[str, Any] | None:
    """Best-annotator IoU/F1 of a model's zones against each annotator's, pooled over the pages."""
    annotators = sorted({a for zones in human.values() for a, boxes in zones.items() if zone_area(boxes) > 0})
    if not annotators:
        return None
    pages = sorted(set(model) | set(human))
    totals: dict[str, Overlap] = {}
    for annotator in annotators:
        total = EMPTY
        for page in pages:
            total = total + overlap(model.get(page, []), human.get(page, {}).get(annotator, []))
        totals[annotator] = total
    f1, iou, annotator = _best(totals)
    return {"f1": f1, "iou": iou, "annotator": annotator, "annotators": len(annotators)}


def score_pairs(model: dict[str, list[Box]], human: dict[str, dict[str, list[Box]]]) -> list[dict[str, Any]]:
    """Per page an annotator boxed: the best-annotator IoU/F1 of the model's zone on that page alone."""
    pairs = []
    for page in sorted(human):
        drawn = {a: boxes for a, boxes in human[page].items() if zone_area(boxes) > 0}
        if not drawn:
            continue
        f1, iou, annotator = _best({a: overlap(model.get(page, []), boxes) for a, boxes in drawn.items()})
        pairs.append({"page": page, "f1": f1, "iou": iou, "annotator": annotator})
    return pairs


def mean_scores(rows: list[dict[str, Any]], domains: list[str], unit: str, count: str) -> dict[str, Any]:
    """Mean IoU/F1 per domain, over every unit pooled, and the mean of domains; rows "missing" are counted."""

    def block(subset_rows: list[dict[str, Any]]) -> dict[str, Any]:
        scored = [r for r in subset_rows if r["status"] != "missing"]
        n = len(scored)
        return {
            count: n,
            "iou": running_mean(r["iou"] for r in scored) if n else None,
            "f1": running_mean(r["f1"] for r in scored) if n else None,
            "missing": len(subset_rows) - n,
        }

    per_domain = {d: block([r for r in rows if r["subset"] == d]) for d in domains}
    scored = [b for b in per_domain.values() if b[count]]
    return {
        "unit": unit,
        "overall": block(rows),
        "macro": {
            "iou": running_mean(b["iou"] for b in scored) if scored else None,
            "f1": running_mean(b["f1"] for b in scored) if scored else None,
        },
        "domains": per_domain,
    }


def page_rates(counts: dict[str, int]) -> dict[str, Any]:
    """Page-level overlap; the "same page" rate in both readings of its denominator."""
    both, model_only, human_only = counts["both"], counts["model_only"], counts["human_only"]

    def ratio(a: int, b: int) -> float | None:
        return a / b if b else None

    return {
        **counts,
        SAME_PAGE_EITHER: ratio(both, both + model_only + human_only),
        SAME_PAGE_HUMAN: ratio(both, both + human_only),
        "human_pages_without_model_box": ratio(human_only, both + human_only),
        "model_pages_without_human_box": ratio(model_only, both + model_only),
    }


def _fmt(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value * 100:.1f}%" if pct else f"{value:.3f}"


def grounding_table(result: dict[str, Any]) -> str:
    scores, per_pair = result["scores"], result["scores_per_pair"]
    pages, published = result["pages"], result["published"]
    convention = result["config"]["box_convention"]
    lines = [
        f"## Visual grounding: {result['config']['generator']} ({result['benchmark']})",
        "",
        "F1 and IoU in two readings: per query (pixels pooled over its pages) and per query-page pair the",
        "annotators boxed. The paper does not say which unit its F1 uses, so its figures stand in both columns.",
        "",
        "| domain | queries | IoU | F1 | pairs | IoU per pair | F1 per pair |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, block in scores["domains"].items():
        pair = per_pair["domains"][name]
        lines.append(
            f"| {name} | {block['queries']} | {_fmt(block['iou'])} | {_fmt(block['f1'])} "
            f"| {pair['pairs']} | {_fmt(pair['iou'])} | {_fmt(pair['f1'])} |"
        )
    overall, macro = scores["overall"], scores["macro"]
    pair_overall, pair_macro = per_pair["overall"], per_pair["macro"]
    lines += [
        f"| all pooled | {overall['queries']} | {_fmt(overall['iou'])} | {_fmt(overall['f1'])} "
        f"| {pair_overall['pairs']} | {_fmt(pair_overall['iou'])} | {_fmt(pair_overall['f1'])} |",
        f"| mean of domains | | {_fmt(macro['iou'])} | {_fmt(macro['f1'])} "
        f"| | {_fmt(pair_macro['iou'])} | {_fmt(pair_macro['f1'])} |",
        f"| paper: human annotators | | | {published['human_f1']:.3f} | | | {published['human_f1']:.3f} |",
        *(f"| paper: {model} | | | {f1:.3f} | | | {f1:.3f} |" for model, f1 in published["models"].items()),
        "",
        f"Pages: {pages['both']} with both a model and a human box; same page "
        f"{_fmt(pages[SAME_PAGE_EITHER], True)} of pages boxed by either side, "
        f"{_fmt(pages[SAME_PAGE_HUMAN], True)} of pages the annotators boxed; model pages without a human box "
        f"{_fmt(pages['model_pages_without_human_box'], True)}.",
        f"Answers: {result['parse']['ok']} well-formed, {result['parse']['no_boxes']} without boxes, "
        f"{result['parse']['malformed']} malformed (recorded, scored on what parsed).",
        f"Boxes: asked and read as {convention['name']} ({convention['order']}, {_grid(convention)}; "
        f"{convention['chosen_by']}); cut to the page image: {result['human_boxes_outside_image']} human, "
        f"{result['model_boxes_outside_image']} model.",
    ]
    return "\n".join(lines) + "\n"


def _grid(convention: dict[str, Any]) -> str:
    if convention["grid"] == "normalized":
        return f"0..{convention['scale']:g}"
    return "page pixels" if convention["grid"] == "page-pixels" else "pixels of the resized image"

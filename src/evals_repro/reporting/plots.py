"""Figures for `report --plots` and `rerank-study report`: matplotlib on the Agg backend, byte-stable.

Same input, same bytes: the font is matplotlib's bundled DejaVu Sans, SVG text is drawn as paths
(no font needed to view it), the SVG id salt is fixed and the date/creator metadata dropped, and the
PNG carries no software or time stamp. Each figure is saved as `<name>.png` and `<name>.svg`, and
`svg_markup` gives the SVG for inlining in an HTML report.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.io import atomic_write_bytes

Bar = tuple[float, float | None, float | None] | None  # estimate, interval low, high; None: no value
STYLE: dict[str, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "svg.fonttype": "path",
    "svg.hashsalt": "evals-repro",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.dpi": 100,
    "savefig.dpi": 120,
    "path.simplify": True,
}


@dataclass
class Figure:
    """A finished figure: `name` is the file stem, `title` what the HTML report captions it with."""

    name: str
    title: str
    figure: Any  # matplotlib.figure.Figure


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    rc: Any = plt.rcParams  # typed with literal keys; STYLE's are plain strings
    rc.update(STYLE)
    return plt


def slug(text: str) -> str:
    """A file stem from a title or method name (`rrf:bm25+minilm` -> `rrf-bm25-minilm`)."""
    return re.sub(r"[^a-z0-9_.]+", "-", text.lower()).strip("-.") or "figure"


def png_bytes(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None}, bbox_inches="tight")
    return buffer.getvalue()


def svg_bytes(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    return buffer.getvalue()


def svg_markup(fig: Any) -> str:
    """The `<svg>` element alone (no XML declaration or DOCTYPE), for inlining in HTML."""
    text = svg_bytes(fig).decode("utf-8")
    return text[text.index("<svg") :]


def save(figures: Sequence[Figure], directory: Path) -> list[Path]:
    """Write each figure as PNG and SVG under `directory` (created); the paths written."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for item in figures:
        for suffix, data in ((".png", png_bytes(item.figure)), (".svg", svg_bytes(item.figure))):
            path = directory / f"{item.name}{suffix}"
            atomic_write_bytes(path, data)
            written.append(path)
    return written


def close(figures: Sequence[Figure]) -> None:
    """Release the figures (pyplot keeps every open one); matplotlib is not imported when there are none."""
    if not figures:
        return
    plt = _pyplot()
    for item in figures:
        plt.close(item.figure)


def _ticks(setter: Any, labels: Sequence[str]) -> None:
    """Tick labels, slanted when long or many, so neighbours never overlap."""
    slanted = len(labels) > 4 or max((len(label) for label in labels), default=0) > 8
    setter(range(len(labels)), list(labels), rotation=30 if slanted else 0, ha="right" if slanted else "center")


def bars(
    name: str, title: str, groups: Sequence[str], series: Sequence[tuple[str, Sequence[Bar]]], ylabel: str
) -> Figure:
    """Grouped bars: one group per column (subset, dataset), one bar per series (method) with its interval."""
    plt = _pyplot()
    width = max(6.0, min(16.0, 1.0 + 0.28 * len(groups) * max(1, len(series))))
    fig, ax = plt.subplots(figsize=(width, 3.6))
    step = 0.8 / max(1, len(series))
    cmap = plt.get_cmap("tab20" if len(series) > 10 else "tab10")
    for k, (label, values) in enumerate(series):
        xs = [i - 0.4 + step * (k + 0.5) for i, v in enumerate(values) if v is not None]
        ys = [v[0] for v in values if v is not None]
        lows = [v[0] - v[1] if v[1] is not None else 0.0 for v in values if v is not None]
        highs = [v[2] - v[0] if v[2] is not None else 0.0 for v in values if v is not None]
        ax.bar(xs, ys, step * 0.9, label=label, color=cmap(k % cmap.N))
        ax.errorbar(xs, ys, yerr=[lows, highs], fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    _ticks(ax.set_xticks, groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return Figure(name, title, fig)


def heatmap(
    name: str, title: str, rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[float]]
) -> Figure:
    """Rows x columns of scores (x100 written in each cell; NaN cells left blank)."""
    import numpy as np

    plt = _pyplot()
    data = np.array(values, dtype=float)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 + 1.1 * len(columns)), max(2.5, 0.9 + 0.38 * len(rows))))
    image = ax.imshow(np.ma.masked_invalid(data * 100), cmap="viridis", vmin=0.0, vmax=100.0, aspect="auto")
    _ticks(ax.set_xticks, columns)
    ax.set_yticks(range(len(rows)), list(rows))
    for (i, j), value in np.ndenumerate(data):
        if not math.isnan(value):
            ax.text(
                j,
                i,
                f"{value * 100:.1f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if value < 0.6 else "black",
            )
    fig.colorbar(image, ax=ax, fraction=0.04)
    ax.set_title(title)
    return Figure(name, title, fig)


@dataclass(frozen=True)
class Point:
    label: str
    x: float
    x_low: float | None
    x_high: float | None
    y: float
    y_low: float | None
    y_high: float | None


def pareto_front(points: Sequence[Point]) -> list[Point]:
    """Points no other point beats on both axes (lower x = faster, higher y = better), by x."""
    front = [p for p in points if not any((q.x <= p.x and q.y >= p.y) and (q.x < p.x or q.y > p.y) for q in points)]
    return sorted(front, key=lambda p: (p.x, -p.y))


def tradeoff(
    name: str, title: str, points: Sequence[Point], xlabel: str, ylabel: str, reference: float | None = None
) -> Figure:
    """Quality against latency with both intervals, the Pareto front as a step line, and a reference line
    (the first stage's quality) when given."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    cmap = plt.get_cmap("tab10")
    for k, p in enumerate(points):
        xerr = [[p.x - p.x_low], [p.x_high - p.x]] if p.x_low is not None and p.x_high is not None else None
        yerr = [[p.y - p.y_low], [p.y_high - p.y]] if p.y_low is not None and p.y_high is not None else None
        ax.errorbar([p.x], [p.y], xerr=xerr, yerr=yerr, fmt="o", color=cmap(k % 10), capsize=3, label=p.label)
    front = pareto_front(points)
    if len(front) > 1:
        ax.step(
            [p.x for p in front],
            [p.y for p in front],
            where="post",
            color="grey",
            linestyle="--",
            linewidth=1,
            label="Pareto front",
        )
    if reference is not None:
        ax.axhline(reference, color="black", linewidth=0.8, linestyle=":", label="first stage")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7, loc="best")
    return Figure(name, title, fig)


def ecdf(name: str, title: str, series: Sequence[tuple[str, Sequence[float]]], xlabel: str) -> Figure:
    """Empirical CDFs, one step line per series (log x when the values span more than a decade)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    cmap = plt.get_cmap("tab10")
    everything = [v for _, values in series for v in values if v > 0]
    for k, (label, values) in enumerate(series):
        ordered = sorted(values)
        if not ordered:
            continue
        ys = [(i + 1) / len(ordered) for i in range(len(ordered))]
        ax.step(ordered, ys, where="post", color=cmap(k % 10), label=f"{label} ({len(ordered)})")
    if everything and max(everything) / min(everything) > 10:
        ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of calls at or below")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="lower right")
    return Figure(name, title, fig)

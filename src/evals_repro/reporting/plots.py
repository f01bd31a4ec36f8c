"""Figures for `report --plots` and `rerank-study report`: matplotlib on the Agg backend, byte-stable.

Same input, same bytes: the font is matplotlib's bundled DejaVu Sans, SVG text is drawn as paths
(no font needed to view it), the SVG id salt is fixed and the date/creator metadata dropped, and the
PNG carries no software or time stamp. Each figure is saved as `<name>.png` and `<name>.svg`, listed in
the directory's manifest (so the next save removes what no longer has a figure), and `svg_markup` gives
the SVG for inlining in an HTML report.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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


MANIFEST = "evals-repro-plots.json"  # in a plots directory: the figure files this package wrote there
SUFFIXES = (".png", ".svg")


@dataclass
class Saved:
    written: list[Path]
    removed: list[Path]  # figures written by an earlier call that no longer correspond to a figure
    note: str = ""  # said when the manifest could not be read (then nothing is removed)


def _manifest_files(directory: Path) -> tuple[set[str], str]:
    """The file names the manifest lists (only plain `<stem>.png|.svg` names: nothing else may be removed), and
    a note when it exists but cannot be read."""
    import json

    path = directory / MANIFEST
    if not path.exists():
        return set(), ""
    try:
        listed = json.loads(path.read_text(encoding="utf-8"))["files"]
        if not isinstance(listed, list):
            raise TypeError("files is not a list")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return set(), f"{path} is unreadable ({exc}): no figure written earlier was removed; it is rewritten now"
    return {
        name
        for name in listed
        if isinstance(name, str) and name == Path(name).name and name not in (".", "..") and name.endswith(SUFFIXES)
    }, ""


def _write_manifest(directory: Path, names: set[str]) -> None:
    from ..base.io import atomic_write_json

    atomic_write_json(directory / MANIFEST, {"written_by": "evals-repro", "files": sorted(names)})


def save(figures: Sequence[Figure], directory: Path) -> Saved:
    """Write each figure as PNG and SVG under `directory` (created), and remove the figure files an earlier call
    wrote there (listed in its MANIFEST) that no figure of this call replaces: a removed method's figures do not
    linger. Nothing the manifest does not list is touched. The manifest lists every file that may have been
    written before a figure is written, so a crash leaves no figure unlisted."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    earlier, note = _manifest_files(directory)
    names = {f"{item.name}{suffix}" for item in figures for suffix in SUFFIXES}
    _write_manifest(directory, earlier | names)
    written = []
    for item in figures:
        for suffix, data in ((".png", png_bytes(item.figure)), (".svg", svg_bytes(item.figure))):
            path = directory / f"{item.name}{suffix}"
            atomic_write_bytes(path, data)
            written.append(path)
    removed = []
    for name in sorted(earlier - names):
        path = directory / name
        if path.is_file() or path.is_symlink():
            path.unlink()
            removed.append(path)
    _write_manifest(directory, names)
    return Saved(written, removed, note)


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


MARK_COLOURS = {"▲": "#0a7a2f", "▼": "#b3261e"}  # the HTML report's better / worse colours


def bars(
    name: str,
    title: str,
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[Bar]]],
    ylabel: str,
    baseline: str | None = None,
    marks: Mapping[tuple[str, str], str] | None = None,
    notes: Mapping[str, str] | None = None,
) -> Figure:
    """Grouped bars: one group per column (subset, dataset), one bar per series (method) with its interval.

    The `baseline` series is hatched, labelled "(baseline)" and drawn as a dashed line across its group, so every
    bar reads against it; `marks` ((series, group) -> ▲ / ▼) are drawn above that bar's interval, and the legend
    says what they mean (`notes`: mark -> its meaning)."""
    plt = _pyplot()
    marks = marks or {}
    width = max(6.0, min(16.0, 1.0 + 0.28 * len(groups) * max(1, len(series))))
    fig, ax = plt.subplots(figsize=(width, 3.6))
    step = 0.8 / max(1, len(series))
    cmap = plt.get_cmap("tab20" if len(series) > 10 else "tab10")
    tops = [v[2] if v[2] is not None else v[0] for _, values in series for v in values if v is not None]
    lift = 0.02 * (max(tops, default=1.0) or 1.0)
    for k, (label, values) in enumerate(series):
        xs = [i - 0.4 + step * (k + 0.5) for i, v in enumerate(values) if v is not None]
        ys = [v[0] for v in values if v is not None]
        lows = [v[0] - v[1] if v[1] is not None else 0.0 for v in values if v is not None]
        highs = [v[2] - v[0] if v[2] is not None else 0.0 for v in values if v is not None]
        chosen = label == baseline
        ax.bar(
            xs,
            ys,
            step * 0.9,
            label=f"{label} (baseline)" if chosen else label,
            color=cmap(k % cmap.N),
            hatch="///" if chosen else None,
            edgecolor="black" if chosen else None,
            linewidth=0.6 if chosen else 0.0,
        )
        ax.errorbar(xs, ys, yerr=[lows, highs], fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
        for i, v in enumerate(values):
            if v is None:
                continue
            x = i - 0.4 + step * (k + 0.5)
            if chosen:
                ax.plot([i - 0.4, i + 0.4], [v[0], v[0]], color="black", linestyle="--", linewidth=0.8, zorder=3)
            mark = marks.get((label, groups[i]))
            if mark:
                top = v[2] if v[2] is not None else v[0]
                ax.text(x, top + lift, mark, ha="center", va="bottom", fontsize=8, color=MARK_COLOURS[mark])
    _ticks(ax.set_xticks, groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if marks:
        ax.set_ylim(top=max(ax.get_ylim()[1], max(tops, default=0.0) + 8 * lift))
    from matplotlib.lines import Line2D

    handles, labels = ax.get_legend_handles_labels()
    if baseline is not None:
        handles.append(Line2D([], [], color="black", linestyle="--", linewidth=0.8))
        labels.append(f"{baseline}'s value")
    for mark, meaning in (notes or {}).items():
        shape = "^" if mark == "▲" else "v"
        handles.append(Line2D([], [], color=MARK_COLOURS[mark], marker=shape, linestyle="none", markersize=6))
        labels.append(meaning)
    ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return Figure(name, title, fig)


@dataclass(frozen=True)
class Panel:
    """One heatmap panel: its title, row and column labels, values (0-1, NaN blank) and a marker per column."""

    title: str
    rows: Sequence[str]
    columns: Sequence[str]
    values: Sequence[Sequence[float]]
    column_marks: Mapping[str, str] = field(default_factory=dict)


def shared_scale(panels: Sequence[Panel]) -> tuple[float, float]:
    """One colour range (x100) for every panel: the values' range, widened to multiples of 5."""
    found = [v * 100 for p in panels for row in p.values for v in row if not math.isnan(v)]
    if not found:
        return 0.0, 100.0
    low, high = 5 * math.floor(min(found) / 5), 5 * math.ceil(max(found) / 5)
    return (float(low), float(high)) if high > low else (float(low), float(low + 5))


def heatmaps(name: str, title: str, panels: Sequence[Panel], label: str, note: str = "") -> Figure:
    """Panels of rows x columns of scores (x100 written in each cell; NaN blank) on ONE colour scale, shown by one
    colour bar labelled `label`, so the same colour is the same score in every panel. A column's marker (▲ / ▼)
    follows its label."""
    import numpy as np

    plt = _pyplot()
    low, high = shared_scale(panels)
    cmap = plt.get_cmap("viridis")
    columns = max(len(p.columns) for p in panels)
    rows = max(len(p.rows) for p in panels)
    panel_width, panel_height = 1.0 + 0.9 * columns, 0.7 + 0.32 * rows
    across = max(1, min(len(panels), int(13 // panel_width)))
    down = math.ceil(len(panels) / across)
    fig, axes = plt.subplots(
        down,
        across,
        figsize=(across * panel_width + 1.4, down * panel_height + 0.9),
        squeeze=False,
        layout="constrained",
    )
    image = None
    for ax, panel in zip(axes.flat, panels):
        data = np.array(panel.values, dtype=float) * 100
        image = ax.imshow(np.ma.masked_invalid(data), cmap=cmap, vmin=low, vmax=high, aspect="auto")
        _ticks(ax.set_xticks, [f"{c} {panel.column_marks[c]}" if c in panel.column_marks else c for c in panel.columns])
        ax.set_yticks(range(len(panel.rows)), list(panel.rows))
        for tick, column in zip(ax.get_xticklabels(), panel.columns):
            if column in panel.column_marks:
                tick.set_color(MARK_COLOURS[panel.column_marks[column]])
        for (i, j), value in np.ndenumerate(data):
            if not math.isnan(value):
                r, g, b, _ = cmap((value - low) / (high - low))
                dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
                ax.text(j, i, f"{value:.1f}", ha="center", va="center", fontsize=7, color="white" if dark else "black")
        ax.set_title(panel.title, fontsize=8)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_axis_off()
    if image is not None:
        fig.colorbar(image, ax=axes.ravel().tolist(), fraction=0.05, label=label)
    fig.suptitle(title, fontsize=9)
    if note:
        fig.supxlabel(note, fontsize=7)
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

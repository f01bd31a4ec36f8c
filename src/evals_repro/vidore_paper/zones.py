"""Zones: the union of an annotator's (or a model's) boxes on a page, compared pixel-wise.

A box covers the pixels [x1, x2) x [y1, y2) (so its area is (x2 - x1) * (y2 - y1)); boxes given with
x1 > x2 or y1 > y2 are read with their ends swapped. Pixels exist only on the page image: every box
is on its page before any pixel is counted (an annotator's cut by `Box.clip`, a model's cut to its grid
over the image by bboxes.py). Overlapping boxes of one zone count their shared pixels once. Areas are exact: the edges of both zones cut the page into a small grid of cells, each
cell is in or out of a zone, and areas are sums of cell sizes; no page-sized bitmap is drawn.

IoU = |A ∩ B| / |A ∪ B| and F1 (the Dice coefficient) = 2 |A ∩ B| / (|A| + |B|). Both are undefined when
both zones are empty; callers leave such comparisons out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

from ..metrics.protocol import running_mean

if TYPE_CHECKING:
    import numpy as np


def _edge(value: float) -> int:
    """The pixel edge a fractional coordinate falls to: pixel i (centre i + 0.5) is inside [x1, x2) when
    x1 <= i + 0.5 < x2, so an edge is ceil(x - 0.5). Python's round() sends halves to the even side: a
    one-pixel box [10.5, 11.5] became 2 pixels wide and [11.5, 12.5] none."""
    return math.ceil(value - 0.5)


@dataclass(frozen=True)
class Box:
    x1: int
    x2: int
    y1: int
    y2: int

    @classmethod
    def of(cls, x1: float, x2: float, y1: float, y2: float) -> Box:
        """A box with ordered ends (x1 <= x2, y1 <= y2) on whole pixels: the pixels whose centres it covers."""
        a, b = sorted((_edge(x1), _edge(x2)))
        c, d = sorted((_edge(y1), _edge(y2)))
        return cls(a, b, c, d)

    @property
    def area(self) -> int:
        return max(0, self.x2 - self.x1) * max(0, self.y2 - self.y1)

    def outside(self, size: tuple[int, int]) -> bool:
        """Whether any edge lies past the page image of `size` (width, height): left or top below 0 too."""
        width, height = size
        return self.x1 < 0 or self.y1 < 0 or self.x2 > width or self.y2 > height

    def clip(self, size: tuple[int, int]) -> Box:
        """The part of the box on the page image of `size` (width, height); a box wholly off it is empty."""
        width, height = size
        x1, x2 = min(max(self.x1, 0), width), min(max(self.x2, 0), width)
        y1, y2 = min(max(self.y1, 0), height), min(max(self.y2, 0), height)
        return Box(x1, x2, y1, y2)


@dataclass(frozen=True)
class Overlap:
    """Pixel counts of two zones: |A|, |B| and |A ∩ B|."""

    area_a: int
    area_b: int
    intersection: int

    @property
    def union(self) -> int:
        return self.area_a + self.area_b - self.intersection

    @property
    def iou(self) -> float:
        return self.intersection / self.union if self.union else float("nan")

    @property
    def f1(self) -> float:
        total = self.area_a + self.area_b
        return 2 * self.intersection / total if total else float("nan")

    def __add__(self, other: Overlap) -> Overlap:
        """Pixels of several pages pooled (a query's zone spans its pages)."""
        return Overlap(self.area_a + other.area_a, self.area_b + other.area_b, self.intersection + other.intersection)


EMPTY = Overlap(0, 0, 0)


def _cover(boxes: Sequence[Box], xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Which grid cells the union of `boxes` covers (cells between consecutive edges)."""
    import numpy as np

    mask = np.zeros((max(len(xs) - 1, 0), max(len(ys) - 1, 0)), dtype=bool)
    for box in boxes:
        if box.area == 0:
            continue
        i0, i1 = np.searchsorted(xs, [box.x1, box.x2])
        j0, j1 = np.searchsorted(ys, [box.y1, box.y2])
        mask[i0:i1, j0:j1] = True
    return mask


def overlap(zone_a: Iterable[Box], zone_b: Iterable[Box]) -> Overlap:
    """Exact pixel areas of two zones and of their intersection."""
    import numpy as np

    a = [b for b in zone_a if b.area > 0]
    b = [b for b in zone_b if b.area > 0]
    if not a and not b:
        return EMPTY
    xs = np.unique(np.array([v for box in a + b for v in (box.x1, box.x2)], dtype=np.int64))
    ys = np.unique(np.array([v for box in a + b for v in (box.y1, box.y2)], dtype=np.int64))
    cells = np.outer(np.diff(xs), np.diff(ys))
    in_a, in_b = _cover(a, xs, ys), _cover(b, xs, ys)
    return Overlap(int(cells[in_a].sum()), int(cells[in_b].sum()), int(cells[in_a & in_b].sum()))


def zone_area(zone: Iterable[Box]) -> int:
    return overlap(zone, ()).area_a


@dataclass(frozen=True)
class Agreement:
    """Agreement on one page: IoU and F1 averaged over every pair of annotators."""

    iou: float
    f1: float
    annotators: int
    comparisons: int


def pairwise_agreement(zones: dict[str, list[Box]]) -> Agreement | None:
    """Mean IoU and F1 over all annotator pairs; None with fewer than two non-empty zones.

    An annotator whose boxes all have zero area drew nothing and is left out.
    """
    drawn = {name: boxes for name, boxes in zones.items() if zone_area(boxes) > 0}
    if len(drawn) < 2:
        return None
    pairs = [overlap(drawn[a], drawn[b]) for a, b in combinations(sorted(drawn), 2)]
    return Agreement(
        iou=running_mean(p.iou for p in pairs),
        f1=running_mean(p.f1 for p in pairs),
        annotators=len(drawn),
        comparisons=len(pairs),
    )

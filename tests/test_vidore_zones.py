"""Zone IoU and F1 (Dice) against areas worked out by hand on small box sets."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evals_repro.vidore_paper.zones import Box, overlap, pairwise_agreement, zone_area


def bitmap(boxes: list[Box], size: int = 120) -> np.ndarray:
    """An independent pixel count: paint the half-open boxes on a bitmap."""
    grid = np.zeros((size, size), dtype=bool)
    for b in boxes:
        grid[b.x1 : b.x2, b.y1 : b.y2] = True
    return grid


def test_overlapping_boxes():
    # A = [10,60)x[10,40): 50*30 = 1500; B = [20,70)x[10,40): 1500; A∩B = [20,60)x[10,40) = 40*30 = 1200.
    o = overlap([Box(10, 60, 10, 40)], [Box(20, 70, 10, 40)])
    assert (o.area_a, o.area_b, o.intersection, o.union) == (1500, 1500, 1200, 1800)
    assert o.iou == pytest.approx(1200 / 1800) and o.f1 == pytest.approx(2400 / 3000)


def test_nested_boxes():
    # [10,40)^2 (900) inside [0,50)^2 (2500): IoU 900/2500 = 0.36, F1 1800/3400.
    o = overlap([Box(0, 50, 0, 50)], [Box(10, 40, 10, 40)])
    assert o.iou == pytest.approx(0.36) and o.f1 == pytest.approx(1800 / 3400)


def test_disjoint_and_touching_boxes():
    assert overlap([Box(0, 10, 0, 10)], [Box(50, 60, 50, 60)]).iou == 0.0
    touching = overlap([Box(0, 10, 0, 10)], [Box(10, 20, 0, 10)])  # share an edge, no pixel
    assert touching.intersection == 0 and touching.f1 == 0.0


def test_a_zone_counts_its_own_overlaps_once():
    # Two boxes of one annotator overlapping on [20,30)x[0,10): 200 + 200 - 100 = 300 pixels.
    zone = [Box(0, 20, 0, 10), Box(10, 30, 0, 10)]
    assert zone_area(zone) == 300
    # Against [0,40)x[0,10) (400): intersection 300, IoU 300/400, F1 600/700.
    o = overlap(zone, [Box(0, 40, 0, 10)])
    assert (o.intersection, o.union) == (300, 400)
    assert o.f1 == pytest.approx(600 / 700)


def test_swapped_ends_and_empty_zones():
    assert Box.of(60, 10, 40, 10) == Box(10, 60, 10, 40)
    assert math.isnan(overlap([], []).iou) and math.isnan(overlap([Box(5, 5, 0, 9)], []).f1)
    assert overlap([Box(0, 10, 0, 10)], []).iou == 0.0


def test_matches_a_painted_bitmap_on_many_random_zones():
    rng = np.random.default_rng(7)
    for _ in range(200):
        zones = []
        for _ in range(2):
            boxes = []
            for _ in range(rng.integers(1, 5)):
                x1, x2 = sorted(rng.integers(0, 120, 2))
                y1, y2 = sorted(rng.integers(0, 120, 2))
                boxes.append(Box(int(x1), int(x2), int(y1), int(y2)))
            zones.append(boxes)
        a, b = bitmap(zones[0]), bitmap(zones[1])
        o = overlap(zones[0], zones[1])
        assert (o.area_a, o.area_b, o.intersection) == (int(a.sum()), int(b.sum()), int((a & b).sum()))


def test_three_annotators_average_the_three_pairs():
    # 0: [0,50)^2 (2500); 1: [10,40)^2 nested (900); 2: [60,90)^2 disjoint (900).
    # Pairs: (0,1) IoU 0.36, F1 1800/3400; (0,2) 0, 0; (1,2) 0, 0.
    agreement = pairwise_agreement({"0": [Box(0, 50, 0, 50)], "1": [Box(10, 40, 10, 40)], "2": [Box(60, 90, 60, 90)]})
    assert agreement.annotators == 3 and agreement.comparisons == 3
    assert agreement.iou == pytest.approx(0.36 / 3) and agreement.f1 == pytest.approx(1800 / 3400 / 3)


def test_fewer_than_two_drawing_annotators_is_not_scored():
    assert pairwise_agreement({"0": [Box(0, 5, 0, 5)]}) is None
    assert pairwise_agreement({"0": [Box(0, 5, 0, 5)], "1": [Box(3, 3, 0, 5)]}) is None  # 1 drew nothing


def test_fractional_edges_take_the_pixels_whose_centres_they_cover():
    # Pixel i spans [i, i + 1), centre i + 0.5: [10.5, 11.5) covers the centre 10.5 only, [11.5, 12.5) the
    # centre 11.5 only; each is one pixel wide, whatever the parity (round() made them 2 and 0 pixels).
    assert Box.of(10.5, 11.5, 0, 1) == Box(10, 11, 0, 1) and Box.of(11.5, 12.5, 0, 1) == Box(11, 12, 0, 1)
    assert Box.of(0.5, 1.5, 2.5, 3.5).area == 1
    # Off a half, a coordinate goes to the nearest edge: 99.99999996 -> 100, 21.1764 -> 21, 149.6 -> 150.
    assert Box.of(99.99999996, 21.1764, 149.6, 0.4) == Box(21, 100, 0, 150)

"""Box conventions per model family (vidore_paper/conventions.py): which one a model name gets, the
options that override it, and Qwen2.5-VL's resized-image grid, against hand-worked values."""

from __future__ import annotations

import pytest

from evals_repro.base.errors import UsageError
from evals_repro.cli.options import BoxConventionChoice
from evals_repro.vidore_paper.conventions import CHOICES, choose_convention, smart_resize
from evals_repro.vidore_paper.zones import Box


@pytest.mark.parametrize(
    ("model", "name", "order", "grid"),
    [
        ("gemini-3-pro-preview", "gemini", "yxyx", "normalized"),
        ("Qwen/Qwen3-VL-235B-A22B-Instruct", "qwen3-vl", "xyxy", "normalized"),
        ("qwen3vl-8b", "qwen3-vl", "xyxy", "normalized"),
        ("Qwen/Qwen2.5-VL-72B-Instruct", "qwen2.5-vl", "xyxy", "resized-pixels"),
        ("Qwen/Qwen2-VL-7B-Instruct", "qwen2-vl", "xyxy", "normalized"),
        ("gpt-5.2", "xyxy", "xyxy", "normalized"),
    ],
)
def test_the_model_name_picks_the_family(model, name, order, grid):
    convention, chosen_by = choose_convention(model, None, None)
    assert (convention.name, convention.order, convention.grid) == (name, order, grid)
    assert chosen_by.startswith("model name") or name == "xyxy"


def test_options_override_the_name():
    convention, chosen_by = choose_convention("gemini-3-pro-preview", "xyxy", None)
    assert (convention.name, convention.order, convention.scale, chosen_by) == (
        "xyxy",
        "xyxy",
        1000.0,
        "--box-convention",
    )
    convention, chosen_by = choose_convention("gemini-3-pro-preview", "auto", 0)
    assert (convention.grid, chosen_by) == ("page-pixels", "--box-scale")
    assert choose_convention("gpt-5.2", "qwen3-vl", None)[0].name == "qwen3-vl"
    with pytest.raises(UsageError, match="applies to --box-convention xyxy only"):
        choose_convention("gpt-5.2", "gemini", 1000)
    with pytest.raises(UsageError, match="unknown --box-convention"):
        choose_convention("gpt-5.2", "sideways", None)
    assert [c.value for c in BoxConventionChoice] == list(CHOICES)


def test_each_family_gets_its_own_prompt():
    prompts = {name: choose_convention("m", name, None)[0].prompt for name in CHOICES[1:]}
    assert prompts == {
        "gemini": "grounding_yx",
        "qwen3-vl": "grounding",
        "qwen2-vl": "grounding",
        "qwen2.5-vl": "grounding_pixels",
        "xyxy": "grounding",
    }


def test_smart_resize_matches_qwen25_processor():
    # 1700 x 2200 (w x h): sides round to multiples of 28 (2200/28 = 78.6 -> 79 -> 2212, 1700/28 = 60.7 -> 61
    # -> 1708), 3.78 Mpx is within 3136..12845056.
    assert smart_resize(2200, 1700) == (2212, 1708)
    # 4000 x 5000: 5012 x 4004 = 20.07 Mpx is too many; beta = sqrt(20e6 / 12845056) = 1.24781, so
    # h = floor(5000 / 1.24781 / 28) * 28 = 143 * 28 = 4004 and w = floor(4000 / 1.24781 / 28) * 28 = 114 * 28.
    assert smart_resize(5000, 4000) == (4004, 3192)
    # 20 x 30: 28 x 28 = 784 is too few; beta = sqrt(3136 / 600) = 2.28619: h = ceil(2.4495) * 28 = 84,
    # w = ceil(1.6330) * 28 = 56.
    assert smart_resize(30, 20) == (84, 56)


def test_qwen25_boxes_are_pixels_of_the_resized_image():
    convention, _ = choose_convention("Qwen/Qwen2.5-VL-7B-Instruct", None, None)
    assert convention.grid_size((1700, 2200)) == (1708, 2212)
    # Half-way on the resized grid is half-way on the page: 854/1708 x 1700 = 850, 1106/2212 x 2200 = 1100.
    assert convention.to_page((854, 1106, 1708, 2212), (1700, 2200)) == Box(850, 1700, 1100, 2200)
    record = convention.as_record("model name (qwen2.5-vl)")
    assert record["resize"] == {"factor": 28, "min_pixels": 3136, "max_pixels": 12845056}


def test_boxes_clip_to_the_page_on_every_edge():
    assert Box(-10, 50, -5, 40).outside((120, 170)) and Box(100, 130, 150, 180).outside((120, 170))
    assert not Box(0, 120, 0, 170).outside((120, 170))
    assert Box(-10, 50, -5, 40).clip((120, 170)) == Box(0, 50, 0, 40)
    assert Box(100, 130, 150, 180).clip((120, 170)) == Box(100, 120, 150, 170)
    assert Box(130, 150, 0, 10).clip((120, 170)).area == 0


def test_a_server_with_other_pixel_limits_is_matched():
    # max_pixels 1003520 (1280 x 28 x 28): 1700 x 2200 -> beta = sqrt(3740000 / 1003520) = 1.930513,
    # h = floor(2200 / 1.930513 / 28) * 28 = 40 * 28 = 1120, w = floor(1700 / 1.930513 / 28) * 28 = 31 * 28 = 868.
    convention, _ = choose_convention("Qwen/Qwen2.5-VL-7B-Instruct", None, None, max_pixels=1003520)
    assert convention.grid_size((1700, 2200)) == (868, 1120)
    assert convention.as_record("x")["resize"] == {"factor": 28, "min_pixels": 3136, "max_pixels": 1003520}
    with pytest.raises(UsageError, match="apply to the qwen2.5-vl convention only, not gemini"):
        choose_convention("gemini-3-pro-preview", None, None, max_pixels=1003520)
    with pytest.raises(UsageError, match="need 0 < min <= max"):
        choose_convention("Qwen/Qwen2.5-VL-7B-Instruct", None, None, min_pixels=5000, max_pixels=4000)

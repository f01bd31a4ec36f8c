"""Each model family's own box convention for `grounding predict`: the order of a box's four numbers
and the grid they sit on. A model is asked in the convention it was trained on and read back in it;
asking Gemini for x first (or reading its y-first answer as x-first) transposes every box.

- `gemini`: `[y_min, x_min, y_max, x_max]` normalized to 0..1000 over the image. Google's documentation
  of Gemini's bounding boxes (Vertex AI "Bounding box detection": "Bounding boxes in the [y_min, x_min,
  y_max, x_max] format ... normalized to 0-1000 for every image").
- `qwen3-vl` (and `qwen2-vl`): `[x1, y1, x2, y2]` relative to the image on 0..1000. QwenLM/Qwen3-VL's
  README ("relative position coordinates"), its ODinW-13 evaluation (`run_odinw.py` maps a box with
  `/ 1000 * [w, h, w, h]`), and its maintainers (QwenLM/Qwen3-VL#866: Qwen2-VL normalizes to [0, 1000);
  #1486: Qwen3-VL the same).
- `qwen2.5-vl`: `[x1, y1, x2, y2]` in absolute pixels of the image as the processor resized it, not of
  the original (QwenLM/Qwen3-VL#676, #866). The resize is qwen-vl-utils' `smart_resize`: each side
  rounded to a multiple of 28, then scaled into 3,136..12,845,056 pixels (the checkpoints'
  preprocessor_config `min_pixels`/`max_pixels`); a server started with other limits is matched with
  `--min-pixels`/`--max-pixels`.
- `xyxy`: `[x1, y1, x2, y2]` on a 0..`--box-scale` grid (1000 by default; 0 = the page image's own
  pixels, its size stated beside each image): what every other model is asked.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

from ..base.errors import UsageError
from .bboxes import Coords
from .zones import Box

# Qwen2.5-VL's image processor: patch 14 x merge 2, pixel limits of its preprocessor_config.json.
QWEN25_FACTOR, QWEN25_MIN_PIXELS, QWEN25_MAX_PIXELS = 28, 3136, 12845056


@dataclass(frozen=True)
class BoxConvention:
    name: str
    order: str  # "xyxy" (x1, y1, x2, y2) or "yxyx" (y1, x1, y2, x2)
    grid: str  # "normalized" (0..scale on both axes), "page-pixels" or "resized-pixels"
    scale: float = 0.0  # the normalized grid's extent
    source: str = ""
    min_pixels: int = QWEN25_MIN_PIXELS  # resized-pixels grids: the processor's pixel limits
    max_pixels: int = QWEN25_MAX_PIXELS

    @property
    def prompt(self) -> str:
        """The pinned prompt file that asks for this convention."""
        if self.grid != "normalized":
            return "grounding_pixels"
        return "grounding_yx" if self.order == "yxyx" else "grounding"

    @property
    def states_size(self) -> bool:
        """Whether each image is shown with its size (a model cannot know a page's pixels otherwise)."""
        return self.grid == "page-pixels"

    def grid_size(self, size: tuple[int, int]) -> tuple[float, float]:
        """(width, height) of the grid the model answers on, for a page image of `size`."""
        width, height = size
        if self.grid == "normalized":
            return self.scale, self.scale
        if self.grid == "page-pixels":
            return float(width), float(height)
        resized_height, resized_width = smart_resize(height, width, self.min_pixels, self.max_pixels)
        return float(resized_width), float(resized_height)

    def to_page(self, coords: Coords, size: tuple[int, int]) -> Box:
        """An x-first box on this grid in page pixels (whole pixels; not clipped)."""
        grid_width, grid_height = self.grid_size(size)
        width, height = size
        x1, y1, x2, y2 = coords
        return Box.of(
            x1 / grid_width * width, x2 / grid_width * width, y1 / grid_height * height, y2 / grid_height * height
        )

    def as_record(self, chosen_by: str) -> dict[str, object]:
        record: dict[str, object] = {"name": self.name, "order": self.order, "grid": self.grid}
        if self.grid == "normalized":
            record["scale"] = self.scale
        if self.grid == "resized-pixels":
            record["resize"] = {
                "factor": QWEN25_FACTOR,
                "min_pixels": self.min_pixels,
                "max_pixels": self.max_pixels,
            }
        return {**record, "chosen_by": chosen_by, "prompt": self.prompt, "source": self.source}


def smart_resize(
    height: int, width: int, min_pixels: int = QWEN25_MIN_PIXELS, max_pixels: int = QWEN25_MAX_PIXELS
) -> tuple[int, int]:
    """(height, width) Qwen2.5-VL's processor resizes an image to: sides on multiples of 28, area in limits."""
    factor = QWEN25_FACTOR
    new_height = max(factor, round(height / factor) * factor)
    new_width = max(factor, round(width / factor) * factor)
    if new_height * new_width > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        new_height = math.floor(height / beta / factor) * factor
        new_width = math.floor(width / beta / factor) * factor
    elif new_height * new_width < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        new_height = math.ceil(height * beta / factor) * factor
        new_width = math.ceil(width * beta / factor) * factor
    return new_height, new_width


GEMINI_DOCS = "Google Vertex AI docs, Bounding box detection: [y_min, x_min, y_max, x_max], normalized to 0-1000"
QWEN3_DOCS = "QwenLM/Qwen3-VL README and evaluation/ODinW-13/run_odinw.py; issues #866, #1486: relative 0-1000"
CONVENTIONS: dict[str, BoxConvention] = {
    "gemini": BoxConvention("gemini", "yxyx", "normalized", 1000.0, GEMINI_DOCS),
    "qwen3-vl": BoxConvention("qwen3-vl", "xyxy", "normalized", 1000.0, QWEN3_DOCS),
    "qwen2-vl": BoxConvention("qwen2-vl", "xyxy", "normalized", 1000.0, "QwenLM/Qwen3-VL#866: Qwen2-VL [0, 1000)"),
    "qwen2.5-vl": BoxConvention(
        "qwen2.5-vl",
        "xyxy",
        "resized-pixels",
        source="QwenLM/Qwen3-VL#676, #866: absolute pixels of the resized input; qwen-vl-utils smart_resize",
    ),
}
GENERIC = "xyxy"
CHOICES = ("auto", *CONVENTIONS, GENERIC)

# Model name (the part after provider:) -> family, first match wins; matched case-insensitively.
FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"gemini", re.IGNORECASE), "gemini"),
    (re.compile(r"qwen3[-_.]?vl", re.IGNORECASE), "qwen3-vl"),
    (re.compile(r"qwen2(?:\.5|_5|5)[-_.]?vl", re.IGNORECASE), "qwen2.5-vl"),
    (re.compile(r"qwen2[-_.]?vl", re.IGNORECASE), "qwen2-vl"),
)


def generic(scale: float) -> BoxConvention:
    grid = "normalized" if scale > 0 else "page-pixels"
    return BoxConvention(GENERIC, "xyxy", grid, scale, "this harness's default ask: x first")


def choose_convention(
    model: str,
    override: str | None,
    box_scale: float | None,
    min_pixels: int | None = None,
    max_pixels: int | None = None,
) -> tuple[BoxConvention, str]:
    """The convention `model` is asked and read in, and why (`--box-convention`, `--box-scale`, or its
    name); `min_pixels`/`max_pixels` set a resized-pixel grid's limits (a server started with others)."""
    convention, chosen_by = _choose(model, override, box_scale)
    if min_pixels is None and max_pixels is None:
        return convention, chosen_by
    if convention.grid != "resized-pixels":
        raise UsageError(
            f"--min-pixels/--max-pixels apply to the qwen2.5-vl convention only, not {convention.name}",
            "drop them, or use --box-convention qwen2.5-vl",
        )
    low = convention.min_pixels if min_pixels is None else min_pixels
    high = convention.max_pixels if max_pixels is None else max_pixels
    if not 0 < low <= high:
        raise UsageError(
            f"--min-pixels {low} / --max-pixels {high}: need 0 < min <= max",
            "give the limits your server's image processor uses (defaults 3136 and 12845056)",
        )
    return dataclasses.replace(convention, min_pixels=low, max_pixels=high), chosen_by


def _choose(model: str, override: str | None, box_scale: float | None) -> tuple[BoxConvention, str]:
    if box_scale is not None and not (math.isfinite(box_scale) and box_scale >= 0):
        raise UsageError(f"--box-scale {box_scale:g} is not a grid size", "use 1000 (or 0 for page pixels)")
    if override not in (None, "auto"):
        if override == GENERIC:
            return generic(1000.0 if box_scale is None else box_scale), "--box-convention"
        if override not in CONVENTIONS:
            raise UsageError(f"unknown --box-convention {override}", f"choose from {', '.join(CHOICES)}")
        if box_scale is not None:
            raise UsageError(
                f"--box-scale applies to --box-convention {GENERIC} only, not {override}",
                f"drop --box-scale ({override} has its own grid), or use --box-convention {GENERIC}",
            )
        return CONVENTIONS[override], "--box-convention"
    if box_scale is not None:
        return generic(box_scale), "--box-scale"
    for pattern, family in FAMILIES:
        if pattern.search(model):
            return CONVENTIONS[family], f"model name ({family})"
    return generic(1000.0), "default (model family not recognised)"

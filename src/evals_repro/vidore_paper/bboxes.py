"""Parse the inline boxes of a grounded answer: `<bboxes image="N">[a, b, c, d], ...</bboxes>`.

N numbers the candidate pages shown with the question (1-based). A box's four numbers are read in the
model's own order (`xyxy`: x1, y1, x2, y2; `yxyx`, Gemini's: y1, x1, y2, x2) and kept x-first, on the
model's grid over the image: 0..scale on both axes (scale 1000 by default), or per image a
(width, height) grid (`grids`: page or resized-image pixels); scale 0 without grids leaves them
unbounded. A model's output is never fatal: whatever cannot be read is recorded as an issue and
the rest is kept —
- a block opened inside another closes the outer one there (issue "nested");
- a block never closed (a truncated answer) keeps its complete boxes; a box cut short is dropped;
- a stray closing tag, a tag without an image number, a page number not shown, a box without four
  numbers, text that is not a box, coordinates off the grid (clipped to it: past the page image, for
  a pixel grid) and empty boxes are reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

TAG = re.compile(r"<bboxes\b([^<>]*)>|</bboxes\s*>", re.IGNORECASE)
IMAGE_ATTR = re.compile(r"""image\s*=\s*["']?\s*(\d+)\s*["']?""", re.IGNORECASE)
GROUP = re.compile(r"\[([^\[\]]*)\]")
WRAPPER = re.compile(r"\[[\s,]*\]")
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
PARTIAL_TAG = re.compile(r"</?b(?:b(?:o(?:x(?:e(?:s)?)?)?)?)?\b[^<>]*$", re.IGNORECASE)

Coords = tuple[float, float, float, float]  # x1, y1, x2, y2 on the model's grid
Grids = dict[int, tuple[float, float]]  # image number -> (width, height) of its grid


@dataclass
class ParsedAnswer:
    text: str  # the answer with its box blocks removed
    boxes: dict[int, list[Coords]] = field(default_factory=dict)  # image number -> boxes
    issues: list[str] = field(default_factory=list)
    blocks: int = 0
    clipped: int = 0  # boxes cut to the grid (for a pixel grid: to the page image)

    @property
    def status(self) -> str:
        if self.issues:
            return "malformed"
        return "ok" if self.blocks else "no_boxes"

    @property
    def n_boxes(self) -> int:
        return sum(len(v) for v in self.boxes.values())

    def as_record(self) -> dict:
        return {
            "status": self.status,
            "blocks": self.blocks,
            "boxes": {str(k): [list(b) for b in v] for k, v in sorted(self.boxes.items())},
            "issues": list(self.issues),
            "clipped": self.clipped,
        }


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class _Reading:
    """How the boxes of one answer are read: the order of the numbers, the grid they sit on."""

    n_images: int
    scale: float
    order: str
    grids: Grids | None

    def grid(self, image: int | None) -> tuple[float, float] | None:
        if self.grids is not None:
            return self.grids.get(image) if image is not None else None
        return (self.scale, self.scale) if self.scale > 0 else None


def _read_block(content: str, image: int | None, reading: _Reading, out: ParsedAnswer) -> None:
    where = f"image {image}" if image is not None else "a block without an image number"
    n_images = reading.n_images
    grid = reading.grid(image)
    boxes: list[Coords] = []
    for match in GROUP.finditer(content):
        numbers = NUMBER.findall(match.group(1))
        leftover = NUMBER.sub("", match.group(1))
        if len(numbers) != 4 or re.search(r"[A-Za-z0-9]", leftover):
            out.issues.append(f"{where}: not a box of four numbers: [{_short(match.group(1))}]")
            continue
        a, b, c, d = (float(n) for n in numbers)
        x1, y1, x2, y2 = (b, a, d, c) if reading.order == "yxyx" else (a, b, c, d)
        if grid is not None:
            width, height = grid
            clipped = (
                min(max(x1, 0.0), width),
                min(max(y1, 0.0), height),
                min(max(x2, 0.0), width),
                min(max(y2, 0.0), height),
            )
            if clipped != (x1, y1, x2, y2):
                extent = f"0..{width:g}" if width == height else f"{width:g} x {height:g}"
                out.issues.append(f"{where}: box [{_short(match.group(1))}] clipped to the {extent} grid")
                out.clipped += 1
            x1, y1, x2, y2 = clipped
        if x1 == x2 or y1 == y2:
            out.issues.append(f"{where}: empty box [{_short(match.group(1))}] dropped")
            continue
        boxes.append((min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)))
    rest = GROUP.sub(" ", content)
    while WRAPPER.search(rest):  # the brackets around a list of boxes: [[...], [...]]
        rest = WRAPPER.sub(" ", rest)
    if "[" in rest:
        out.issues.append(f"{where}: a box cut short: {_short(rest[rest.index('[') :])}")
        rest = rest[: rest.index("[")]
    if re.search(r"[A-Za-z0-9]", rest.replace("bbox_2d", "").replace("bbox", "")):
        out.issues.append(f"{where}: text that is not a box: {_short(rest)}")
    if image is None:
        if boxes:
            out.issues.append(f"{len(boxes)} box(es) dropped: their block names no image")
        return
    if not 1 <= image <= n_images:
        out.issues.append(f"image {image} was not shown (pages 1..{n_images}): {len(boxes)} box(es) dropped")
        return
    if boxes:
        out.boxes.setdefault(image, []).extend(boxes)


def parse_answer(
    output: str, n_images: int, scale: float = 1000.0, order: str = "xyxy", grids: Grids | None = None
) -> ParsedAnswer:
    """Read every `<bboxes image="N">` block of a model's output; see the module docstring."""
    if order not in ("xyxy", "yxyx"):
        raise ValueError(f"unknown box order {order!r}")
    reading = _Reading(n_images, scale, order, grids)
    parsed = ParsedAnswer(text="")
    text_parts: list[str] = []
    position = 0
    open_image: int | None = None
    open_at: int | None = None  # where the open block's content starts
    for match in TAG.finditer(output):
        if open_at is None:
            text_parts.append(output[position : match.start()])
        else:
            _read_block(output[open_at : match.start()], open_image, reading, parsed)
        position = match.end()
        if match.group(0).startswith("</"):
            if open_at is None:
                parsed.issues.append("a closing </bboxes> with no open block")
            open_at = None
            continue
        if open_at is not None:
            parsed.issues.append(f"nested <bboxes>: the image {open_image} block was still open")
        attribute = IMAGE_ATTR.search(match.group(1) or "")
        open_image = int(attribute.group(1)) if attribute else None
        if attribute is None:
            parsed.issues.append(f"a <bboxes> tag without an image number: {_short(match.group(0))}")
        open_at = match.end()
        parsed.blocks += 1
    tail = output[position:]
    if open_at is not None:
        partial = PARTIAL_TAG.search(tail)
        content = tail[: partial.start()] if partial else tail
        _read_block(content, open_image, reading, parsed)
        parsed.issues.append(f"the image {open_image} block is never closed (output truncated?)")
    else:
        partial = PARTIAL_TAG.search(tail)
        if partial:
            parsed.issues.append(f"a tag cut short at the end: {_short(partial.group(0))}")
            tail = tail[: partial.start()]
        text_parts.append(tail)
    parsed.text = " ".join(" ".join(text_parts).split())
    return parsed

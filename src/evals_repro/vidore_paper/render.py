"""How a page becomes generator input here: `page_parts` is the one place (until the shared renderer lands).

A context is a list of parts, text or image, that the generator clients translate to their wire
formats. Every page is introduced by a short label so the model (and a grounded answer's
`<bboxes image="N">`) can refer to it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..data import Page
from ..errors import DataError


@dataclass(frozen=True)
class Part:
    text: str | None = None
    image: bytes | None = None
    mime_type: str | None = None


def image_mime_type(data: bytes) -> str:
    """The MIME type of encoded image bytes, read from their signature."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    raise DataError("a page image is not PNG, JPEG, WEBP or GIF", "check the corpus image column")


def page_parts(page: Page, kind: str, label: str) -> list[Part]:
    """One page as generator input: `kind` "text" gives its markdown, "image" its page image."""
    if kind == "text":
        body = page.text.strip() or "(this page has no text)"
        return [Part(text=f"{label}:\n{body}")]
    if kind == "image":
        if page.image is None:
            raise DataError(f"page {page.id} has no image", "load the subset with page images (content images)")
        return [Part(text=f"{label}:"), Part(image=page.image, mime_type=image_mime_type(page.image))]
    raise ValueError(f"unknown page kind {kind!r}")

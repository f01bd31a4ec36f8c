"""How a page becomes generator input: the shared renderer's styles (`evals_repro.base.rendering`), as parts.

A context is a list of parts, text or image, that the generator clients translate to their wire
formats. Every page is introduced by a short label so the model (and a grounded answer's
`<bboxes image="N">`) can refer to it: a text page is rendered `plain` (what BM25 and rerankers read),
an image page `image` (the page image, with its title as a text part when it has one).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base.data import Page
from ..base.images import provider_image_mime


@dataclass(frozen=True)
class Part:
    text: str | None = None
    image: bytes | None = None
    mime_type: str | None = None


def page_parts(page: Page, kind: str, label: str) -> list[Part]:
    """One page as generator input: `kind` "text" gives its text, "image" its page image."""
    from ..base.rendering import PageStyle, render_page

    if kind == "text":
        body = (render_page(page, PageStyle.PLAIN).text or "").strip() or "(this page has no text)"
        return [Part(text=f"{label}:\n{body}")]
    if kind == "image":
        rendered = render_page(page, PageStyle.IMAGE)
        assert rendered.image is not None
        head = f"{label}: {rendered.text}" if rendered.text else f"{label}:"
        return [Part(text=head), Part(image=rendered.image, mime_type=provider_image_mime(rendered.image))]
    raise ValueError(f"unknown page kind {kind!r}")

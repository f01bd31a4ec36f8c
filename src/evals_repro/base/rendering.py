"""How a page or a query becomes model input: one renderer, one named style per kind of model.

Every component that reads pages (BM25, dense embedders, stores, rerankers, the reranking study)
asks this module, so the same page reaches the same model as the same string wherever it comes
from, and the style is recorded in each result's method configuration.

Page styles:
- `plain`: `{title}\\n\\n{text}` (just the text without a title): BM25 and every reranker.
- `labelled`: `title: {title}\\n{text}`: text embedders, which see the title as a labelled line.
- `title-field`: text with the title kept apart for the model's own title slot (Gemini's document
  prompt `title: ... | text: ...`).
- `body`: the text alone, the title travelling as metadata (store uploads).
- `image`: the page image, with `title: {title}` as a text part beside it when the page has a title
  (MIRACL-VISION's titles reach image embedders this way).

Queries: first stages read the query text; rerankers read the text and its instruction, if any.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .data import Page, Query
from .errors import DataError


class PageStyle(StrEnum):
    PLAIN = "plain"
    LABELLED = "labelled"
    TITLE_FIELD = "title-field"
    BODY = "body"
    IMAGE = "image"


TEMPLATES: dict[PageStyle, str] = {
    PageStyle.PLAIN: "{title}\n\n{text} (text alone without a title)",
    PageStyle.LABELLED: "title: {title}\n{text} (text alone without a title)",
    PageStyle.TITLE_FIELD: "{text}, title in the model's title slot",
    PageStyle.BODY: "{text}, title as metadata",
    PageStyle.IMAGE: "page image, plus a 'title: {title}' text part when there is a title",
}


@dataclass(frozen=True)
class ModelInput:
    """What one model call item is made of: text, an image (encoded bytes), or both; plus a title
    for models with a title slot."""

    text: str | None = None
    image: bytes | None = None
    title: str | None = None


def render_page(page: Page, style: PageStyle | str) -> ModelInput:
    """The input a model of this style receives for `page`."""
    style = PageStyle(style)
    if style is PageStyle.IMAGE:
        if page.image is None:
            raise DataError(f"page {page.id} has no image", "use --content markdown for this benchmark")
        return ModelInput(text=f"title: {page.title}" if page.title else None, image=page.image, title=page.title)
    if style is PageStyle.PLAIN:
        return ModelInput(text=f"{page.title}\n\n{page.text}" if page.title else page.text)
    if style is PageStyle.LABELLED:
        return ModelInput(text=f"title: {page.title}\n{page.text}" if page.title else page.text)
    return ModelInput(text=page.text, title=page.title)  # TITLE_FIELD, BODY


def page_text(page: Page, style: PageStyle | str = PageStyle.PLAIN) -> str:
    """The text of a page in a text style (what BM25 indexes and rerankers read by default)."""
    text = render_page(page, style).text
    return text or ""


def query_text(query: Query, *, reranker: bool = False) -> str:
    """First stages search with the query alone; rerankers read it with its instruction."""
    return query.reranker_text if reranker else query.text


def describe(style: PageStyle | str) -> dict[str, Any]:
    """The style as recorded in result files."""
    style = PageStyle(style)
    return {"style": style.value, "template": TEMPLATES[style]}

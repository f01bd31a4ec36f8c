"""What the uploader and the store retriever agree on: store names, page payloads, listing, the fix.

A page is one store file: its `external_id` is the page id, its metadata carries the page id, a
digest of the uploaded bytes (so a changed page is re-uploaded) and the title when there is one.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..base.data import Page
from ..base.errors import DataError, UsageError, choices
from ..base.images import JPEG, PNG, WEBP, image_format
from ..base.rendering import PageStyle, page_text
from ..base.usage import Usage

CONTENTS = ("markdown", "images")
PARSING = ("fast", "high_quality")
TERMINAL = ("completed", "failed", "cancelled")
LIST_PAGE_SIZE = 100
MAX_LIST_PAGES = 100_000  # a bound on the pagination loop, far above any benchmark
STORE_FORMATS = (PNG, JPEG, WEBP)  # page images uploaded as they are; others are re-encoded to PNG once


def default_prefix(benchmark: str) -> str:
    return f"{benchmark}-eval"


def store_name(prefix: str, subset: str, content: str) -> str:
    """`<prefix>-<subset>-<content>` in the characters stores accept: lowercase letters, digits, `.`, `-`."""
    if content not in CONTENTS:
        raise UsageError(f"unknown store content '{content}'", f"choose from {choices(CONTENTS)}")
    raw = f"{prefix}-{subset}-{content}".lower()
    name = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9.-]", "-", raw)).strip("-.")
    if not name:
        raise UsageError(f"--store-prefix '{prefix}' gives an empty store name", "use letters and digits")
    return name


def upload_command(benchmark: str, subset: str, content: str, prefix: str) -> str:
    """The exact command that fills the store a run needs."""
    command = f"evals-repro mixedbread-upload {content} --benchmark {benchmark} --subsets {subset}"
    if prefix != default_prefix(benchmark):
        command += f" --store-prefix {prefix}"
    return command


def _safe_filename(page_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", page_id)[:120] or "page"


@dataclass(frozen=True)
class Payload:
    filename: str
    data: bytes
    mime_type: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


# Stores index the page body; the title travels as file metadata (the store's reranker reads it from there).
PAGE_STYLE = PageStyle.BODY


def has_content(page: Page, content: str) -> bool:
    """Whether the page has something to upload for this content (cheap: no encoding)."""
    return bool(page_text(page, PAGE_STYLE).strip()) if content == "markdown" else page.image is not None


def page_payload(page: Page, content: str) -> Payload | None:
    """The file uploaded for a page, or None when the page has nothing of that content."""
    if content == "markdown":
        text = page_text(page, PAGE_STYLE)
        if not text.strip():
            return None
        return Payload(f"{_safe_filename(page.id)}.md", text.encode("utf-8"), "text/markdown")
    if page.image is None:
        return None
    found = image_format(page.image)
    if found not in STORE_FORMATS:
        import io

        from PIL import Image  # unusual formats are re-encoded once, losslessly

        buffer = io.BytesIO()
        try:
            Image.open(io.BytesIO(page.image)).save(buffer, format="PNG")
        except (OSError, ValueError, SyntaxError) as exc:  # Pillow's "cannot identify" is an OSError
            raise DataError(
                f"page {page.id}: its image cannot be read ({type(exc).__name__}: {exc})",
                "re-export the corpus's page images as PNG or JPEG (the dataset's image column)",
            ) from None
        return Payload(f"{_safe_filename(page.id)}.png", buffer.getvalue(), "image/png")
    assert found is not None
    return Payload(f"{_safe_filename(page.id)}.{found.extension}", page.image, found.mime)


def page_metadata(page: Page, payload: Payload) -> dict[str, Any]:
    metadata: dict[str, Any] = {"page_id": page.id, "sha256": payload.digest}
    if page.title:
        metadata["title"] = page.title
    return metadata


def external_id_of(item: Any) -> str | None:
    """A store file's or search chunk's page id: `external_id`, else the `page_id` metadata."""
    if getattr(item, "external_id", None):
        return item.external_id
    metadata = getattr(item, "metadata", None)
    if isinstance(metadata, dict) and metadata.get("page_id"):
        return str(metadata["page_id"])
    return None


Call = Callable[..., Any]  # call(fn, what, billed=None)
STORE_MODEL = "store"  # the price table's name for what Mixedbread Stores bill (indexing, storage, searches)


def retrying(settings: Any, usage: Usage) -> Call:
    """`call(fn, what, billed=None)`: one provider call through the shared throttle and retry policy; a
    billed call (`billed`: its units, e.g. {"store_tokens": n}) is counted, priced and held to --max-cost."""
    from ..providers.retry import call_with_retries

    def call(fn: Callable[[], Any], what: str, billed: dict[str, float] | None = None) -> Any:
        if not billed:
            return call_with_retries(settings, fn, usage=usage, what=what)
        return call_with_retries(
            settings, fn, usage=usage, what=what, model=STORE_MODEL, bill=lambda _: billed, estimate=billed
        )

    return call


def indexing_units(payload: Payload, parsing: str) -> dict[str, float]:
    """What indexing one uploaded page bills: its estimated tokens (text), or one image page. Mixedbread
    reports no count, so plan, record and ceiling share this one guess (0.75 words a token)."""
    import math

    from ..providers.plan import central_tokens

    if payload.mime_type.startswith("text/"):
        unit = "store_tokens_high_quality" if parsing == "high_quality" else "store_tokens"
        return {unit: max(1, math.ceil(central_tokens(payload.data.decode("utf-8", errors="replace"))))}
    return {"store_image_pages": 1}


def find_store(client: Any, call: Call, name: str) -> Any | None:
    """The store with this name, or None when it does not exist."""
    import mixedbread

    def fetch() -> Any:
        try:
            return client.stores.retrieve(name)
        except mixedbread.NotFoundError:
            return None

    return call(fetch, f"store lookup {name}")


def list_store_files(client: Any, call: Call, store_id: str, all_ids: set[str] | None = None) -> dict[str, Any]:
    """Every file in the store by page id (paginated; the last entry wins if an id repeats).

    `all_ids`, when given, receives the id of every store file listed (whatever its page)."""
    files: dict[str, Any] = {}
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        kwargs: dict[str, Any] = {"limit": LIST_PAGE_SIZE}
        if cursor:
            kwargs["after"] = cursor
        page = call(functools.partial(client.stores.files.list, store_id, **kwargs), "store file listing")
        for item in page.data:
            if all_ids is not None:
                all_ids.add(item.id)
            page_id = external_id_of(item)
            if page_id is not None:
                files[page_id] = item
        next_cursor = page.pagination.last_cursor if page.pagination else None
        if not (page.pagination and page.pagination.has_more) or not next_cursor or next_cursor == cursor:
            return files
        cursor = next_cursor
    return files

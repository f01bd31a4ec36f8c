"""Image bytes as providers take them: MIME type from the magic number, data URIs, pixel counts."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable

from ..base.errors import DataError

MAGIC = [
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
]


def image_mime(data: bytes) -> str:
    for magic, mime in MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    raise DataError("page image is not PNG, JPEG, WEBP or GIF", "re-export the page images in one of those formats")


def data_uri(data: bytes) -> str:
    """The original bytes as a data URI (no re-encoding: the provider sees exactly the stored image)."""
    return f"data:{image_mime(data)};base64,{base64.b64encode(data).decode()}"


def image_pixels(data: bytes) -> int:
    """Width x height, read from the header only."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
    return width * height


def content_parts(text: str | None, image: bytes | None, image_part: Callable[[str], dict]) -> list[dict]:
    """One item's multimodal `content`: its text part, then its image as a data-URI part in the
    provider's own shape (`image_part(uri)`), as Voyage and Cohere both take them."""
    parts: list[dict] = []
    if text:
        parts.append({"type": "text", "text": text})
    if image is not None:
        parts.append(image_part(data_uri(image)))
    return parts

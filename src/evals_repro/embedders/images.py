"""Image bytes as providers take them: data URIs (MIME type from base.images), pixel counts."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable

from ..base.images import provider_image_mime


def data_uri(data: bytes) -> str:
    """The original bytes as a data URI (no re-encoding: the provider sees exactly the stored image)."""
    return f"data:{provider_image_mime(data)};base64,{base64.b64encode(data).decode()}"


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

"""What format encoded image bytes are in, read from their signature (no decoding, no Pillow).

One reader for every place that sends a page image somewhere (embedding and generation providers take
PNG, JPEG, WebP and GIF as they are; a vector store re-encodes what it does not take), so they agree
on what a page image is. The signatures are the formats' own:
- PNG: the 8-byte signature 89 50 4E 47 0D 0A 1A 0A (PNG spec, 5.2);
- JPEG: SOI (FF D8) followed by the next marker's FF (ITU T.81, B.1.1.3; JFIF, Exif and raw all start so);
- GIF: "GIF87a" or "GIF89a" (GIF89a spec, 17);
- WebP: "RIFF", a 4-byte little-endian size, "WEBP" (RFC 9649, 2);
- TIFF ("II*\\0" / "MM\\0*") and BMP ("BM", then a 12-byte header whose reserved words are zero) are told
  apart only to name them in a refusal: providers take neither.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ImageFormat:
    name: str
    mime: str
    extension: str


PNG = ImageFormat("PNG", "image/png", "png")
JPEG = ImageFormat("JPEG", "image/jpeg", "jpg")
GIF = ImageFormat("GIF", "image/gif", "gif")
WEBP = ImageFormat("WebP", "image/webp", "webp")
TIFF = ImageFormat("TIFF", "image/tiff", "tif")
BMP = ImageFormat("BMP", "image/bmp", "bmp")

# What hosted embedding and generation APIs take as page images.
PROVIDER_FORMATS = (PNG, JPEG, WEBP, GIF)


def image_format(data: bytes) -> ImageFormat | None:
    """The format whose signature `data` starts with, or None when it is none of those known here."""
    head = bytes(data[:16])
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if head.startswith(b"\xff\xd8\xff"):
        return JPEG
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return GIF
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return WEBP
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return TIFF
    if head[:2] == b"BM" and len(head) >= 14 and head[6:10] == b"\x00\x00\x00\x00":
        return BMP
    return None


def provider_image_mime(data: bytes) -> str:
    """The MIME type of a page image a provider takes as it is; a `DataError` naming what it is otherwise."""
    found = image_format(data)
    if found in PROVIDER_FORMATS:
        assert found is not None
        return found.mime
    from .errors import DataError

    if found is not None:
        what = f"a {found.name} image"
    elif not data:
        what = "empty"
    else:
        what = f"of no known image format (its first bytes are {bytes(data[:8]).hex(' ')})"
    raise DataError(
        f"a page image is {what}, not PNG, JPEG, WebP or GIF",
        "re-export the corpus's page images as PNG or JPEG (the dataset's image column)",
    )

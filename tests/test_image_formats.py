"""One reader of page-image formats (base/images.py), by the formats' own signatures, for every sender: the
embedders' data URIs, the ViDoRe paper's generator parts and the vector store's uploads agree on each image."""

from __future__ import annotations

import io

import pytest

from evals_repro.base.data import Page
from evals_repro.base.errors import DataError
from evals_repro.base.images import image_format, provider_image_mime
from evals_repro.embedders.images import data_uri
from evals_repro.stores.common import page_payload
from evals_repro.vidore_paper.render import page_parts


def encoded(fmt: str) -> bytes:
    """A real file of each format, as Pillow writes it."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (3, 2), (200, 10, 10)).save(buffer, format=fmt)
    return buffer.getvalue()


# Headers written by hand from the specs (not by the code under test), and what each must be read as.
SIGNATURES = [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "PNG"),
    (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "JPEG"),  # JFIF: SOI, then APP0
    (b"\xff\xd8\xff\xe1\x00\x16Exif\x00\x00", "JPEG"),  # Exif: SOI, then APP1
    (b"\xff\xd8\xff\xdb\x00\x43\x00", "JPEG"),  # raw: SOI, then DQT
    (b"GIF87a\x03\x00\x02\x00", "GIF"),
    (b"GIF89a\x03\x00\x02\x00", "GIF"),
    (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "WebP"),
    (b"II*\x00\x08\x00\x00\x00", "TIFF"),
    (b"MM\x00*\x00\x00\x00\x08", "TIFF"),
    (b"BM\x46\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00", "BMP"),
    # Near misses: a prefix of a signature is not the format.
    (b"\x89PNG\r\n\x00\x00", None),  # PNG's line-ending check bytes wrong (a text-mode transfer)
    (b"\xff\xd8\x00\x00\x00\x00", None),  # SOI without a marker after it
    (b"\xff\xd8", None),
    (b"GIF88a\x03\x00", None),
    (b"RIFF\x24\x00\x00\x00WAVEfmt ", None),  # RIFF, but audio
    (b"BM is a text file", None),
    (b"<html>", None),
    (b"", None),
]


@pytest.mark.parametrize(("head", "name"), SIGNATURES)
def test_each_signature_is_read_as_its_spec_says(head, name):
    found = image_format(head)
    assert (found.name if found else None) == name


@pytest.mark.parametrize(
    ("fmt", "mime", "extension"),
    [
        ("PNG", "image/png", "png"),
        ("JPEG", "image/jpeg", "jpg"),
        ("GIF", "image/gif", "gif"),
        ("WEBP", "image/webp", "webp"),
        ("TIFF", "image/tiff", "tif"),
        ("BMP", "image/bmp", "bmp"),
    ],
)
def test_real_files_of_each_format(fmt, mime, extension):
    found = image_format(encoded(fmt))
    assert found is not None and (found.mime, found.extension) == (mime, extension)


@pytest.mark.parametrize(("fmt", "mime"), [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("WEBP", "image/webp")])
def test_every_sender_agrees_on_an_image_it_sends_as_it_is(fmt, mime):
    data = encoded(fmt)
    page = Page(id="p1", text="", image=data)
    assert data_uri(data).startswith(f"data:{mime};base64,")
    assert page_parts(page, "image", "Page 1")[-1].mime_type == mime
    payload = page_payload(page, "images")
    assert payload is not None and (payload.mime_type, payload.data) == (mime, data)


def test_a_gif_goes_to_providers_as_it_is_and_to_the_store_as_png():
    data = encoded("GIF")
    assert provider_image_mime(data) == "image/gif"
    payload = page_payload(Page(id="p1", text="", image=data), "images")
    assert payload is not None and payload.mime_type == "image/png" and payload.filename == "p1.png"
    assert payload.data.startswith(b"\x89PNG\r\n\x1a\n")


def test_a_format_providers_do_not_take_is_named_in_one_line():
    with pytest.raises(DataError) as info:
        provider_image_mime(encoded("TIFF"))
    assert info.value.one_line().startswith("a page image is a TIFF image, not PNG, JPEG, WebP or GIF: re-export")
    with pytest.raises(DataError, match="first bytes are ff d8 00 00"):
        provider_image_mime(b"\xff\xd8\x00\x00 not a jpeg")


def test_bytes_that_only_start_like_a_jpeg_are_not_uploaded_as_one():
    """The store's own sniffer once took SOI alone (FF D8) for a JPEG and uploaded anything so starting."""
    with pytest.raises(DataError, match="page p7: its image cannot be read"):
        page_payload(Page(id="p7", text="", image=b"\xff\xd8 and then text"), "images")

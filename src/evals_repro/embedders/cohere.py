"""Cohere embed-v4.0: text through `texts`, page images (with their text, if any) through `inputs`.

Per request: at most 96 items (Cohere API). Images travel as data URIs with a combined 20 MB cap, so an
image batch is planned by encoded size (18 MB, leaving room for JSON) rather than by tokens. Image calls
have their own per-minute item budget (`cohere_image_ipm`, default 400: Cohere production Embed (Images)).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..base.context import MethodContext
from ..base.errors import UsageError
from ..base.registry import EMBEDDERS
from ..providers.batching import estimate_tokens
from ..providers.clients import cohere_client
from .api import ApiEmbedder
from .base import EmbedItem, InputType
from .images import content_parts, image_pixels

MODELS = {"cohere-embed-v4.0": "embed-v4.0"}
INPUT_TYPES = {"query": "search_query", "document": "search_document"}
IMAGE_BYTES_PER_REQUEST = 18_000_000
DEFAULT_IMAGE_IPM = 400
# Oracle's page on cohere.embed-v4.0: "a 512 x 512 image is converted to about 1,610 tokens" (~163 pixels a token).
PIXELS_PER_IMAGE_TOKEN = 163


class CohereEmbedder(ApiEmbedder):
    provider = "cohere"
    supports_images = True

    def __init__(self, name: str, ctx: MethodContext) -> None:
        super().__init__(name, MODELS[name], ctx)
        try:
            image_ipm = int(ctx.options.get("cohere_image_ipm") or DEFAULT_IMAGE_IPM)
        except (TypeError, ValueError):
            raise UsageError(
                f"option cohere_image_ipm={ctx.options.get('cohere_image_ipm')!r} is not a number",
                "give a whole number of images per minute",
            ) from None
        self.image_settings = replace(self.settings, items_per_minute=image_ipm)

    def make_client(self, settings):
        return cohere_client(settings)

    def plan_cost(self, item: EmbedItem, input_type: InputType) -> int:
        if item.image is not None:  # image batches are planned by bytes: a data URI is 4/3 of the image
            return len(item.image) * 4 // 3 + len((item.text or "").encode())
        return self.cost(item, input_type)

    def cost(self, item: EmbedItem, input_type: InputType) -> int:
        """Estimated tokens: the text's, plus an image's at about PIXELS_PER_IMAGE_TOKEN pixels a token."""
        tokens = estimate_tokens(item.text) if item.text else 0
        if item.image is not None:
            try:
                tokens += -(-image_pixels(item.image) // PIXELS_PER_IMAGE_TOKEN)
            except Exception:  # noqa: BLE001 - a header PIL cannot read: Cohere decides; book a 512x512 page
                tokens += 512 * 512 // PIXELS_PER_IMAGE_TOKEN
        return max(1, tokens)

    def billed_units(self, items: list[EmbedItem], tokens: int) -> dict[str, float]:
        """A request with images bills image tokens (Cohere's image rate), else text tokens."""
        if any(item.image is not None for item in items):
            return {"image_tokens": tokens}
        return {"input_tokens": tokens}

    def batch_limits(self, items):
        if any(item.image is not None for item in items):
            return self.settings.max_batch_items, IMAGE_BYTES_PER_REQUEST
        return super().batch_limits(items)

    def batch_settings(self, items):
        return self.image_settings if any(item.image is not None for item in items) else self.settings

    def request(self, items: list[EmbedItem], input_type: InputType):
        kwargs: dict[str, Any] = {
            "model": self.model,
            "input_type": INPUT_TYPES[input_type],
            "embedding_types": ["float"],
        }
        if self.dimension:
            kwargs["output_dimension"] = self.dimension
        if any(item.image is not None for item in items):
            inputs = [
                {
                    "content": content_parts(
                        item.text, item.image, lambda uri: {"type": "image_url", "image_url": {"url": uri}}
                    )
                }
                for item in items
            ]
            response = self.client.embed(inputs=inputs, **kwargs)
        else:
            response = self.client.embed(texts=[item.text or "" for item in items], **kwargs)
        billed = getattr(getattr(response, "meta", None), "billed_units", None)
        tokens = getattr(billed, "input_tokens", None)
        return response.embeddings.float_, int(tokens) if tokens is not None else None

    def describe(self):
        return {**super().describe(), "input_type": "search_query|search_document"}


@EMBEDDERS.register(
    "cohere-embed-v4.0",
    description="Cohere embed-v4.0 embeddings of text or page images",
    contents=("markdown", "images"),
    key_env="COHERE_API_KEY",
)
def build(name: str, ctx: MethodContext) -> CohereEmbedder:
    return CohereEmbedder(name, ctx)

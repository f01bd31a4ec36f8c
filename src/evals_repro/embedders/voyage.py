"""Voyage embedders: voyage-4-large / voyage-4 / voyage-4-lite (text) and voyage-multimodal-3.5 (text and images).

Batch limits per request (Voyage docs): at most 1,000 inputs and 120K (4-large) / 320K (4) / 1M (4-lite)
total tokens; multimodal: 1,000 inputs and 320K tokens, where every 560 image pixels count as a token.
We send at most 32 page images per multimodal request to keep request bodies reasonable. Images go as
data URIs of the stored bytes (the SDK would re-encode PIL images as lossless WEBP).
"""

from __future__ import annotations

from ..base.context import MethodContext
from ..base.registry import EMBEDDERS
from ..providers.batching import estimate_tokens
from ..providers.clients import voyage_client
from .api import ApiEmbedder, ReportedTokens
from .base import EmbedItem, InputType
from .images import content_parts, image_pixels

TEXT_MODELS = {"voyage-4-large": 120_000, "voyage-4": 320_000, "voyage-4-lite": 1_000_000}
MULTIMODAL_MODELS = {"voyage-multimodal-3.5": 320_000}
PIXELS_PER_TOKEN = 560
BILLED_PIXELS = (50_000, 2_000_000)  # Voyage bills an image as at least 50K and at most 2M pixels
MULTIMODAL_MAX_ITEMS = 32


class VoyageEmbedder(ApiEmbedder):
    provider = "voyage"

    def __init__(self, name: str, ctx: MethodContext) -> None:
        super().__init__(name, name, ctx, max_batch_tokens=TEXT_MODELS[name])

    def make_client(self, settings):
        return voyage_client(settings)

    def request(self, items: list[EmbedItem], input_type: InputType):
        result = self.client.embed(
            [item.text or "" for item in items],
            model=self.model,
            input_type=input_type,
            truncation=True,
            output_dimension=self.dimension,
        )
        return result.embeddings, result.total_tokens

    def describe(self):
        return {**super().describe(), "input_type": "query|document", "truncation": True}


class VoyageMultimodalEmbedder(VoyageEmbedder):
    supports_images = True

    def __init__(self, name: str, ctx: MethodContext) -> None:
        ApiEmbedder.__init__(
            self, name, name, ctx, max_batch_items=MULTIMODAL_MAX_ITEMS, max_batch_tokens=MULTIMODAL_MODELS[name]
        )

    def cost(self, item: EmbedItem, input_type: InputType) -> int:
        tokens = estimate_tokens(item.text) if item.text else 0
        if item.image is not None:
            tokens += -(-image_pixels(item.image) // PIXELS_PER_TOKEN)
        return max(1, tokens)

    def billed_units(self, items: list[EmbedItem], tokens: int) -> dict[str, float]:
        """Text tokens and image pixels, as Voyage reported them; else estimated (the tokens Voyage counts
        include pixels / 560 per image; an image is billed as at least 50K and at most 2M pixels)."""
        reported = getattr(tokens, "units", None)
        if reported is not None:
            return dict(reported)
        pixels = [image_pixels(item.image) for item in items if item.image is not None]
        image_tokens = sum(-(-count // PIXELS_PER_TOKEN) for count in pixels)
        low, high = BILLED_PIXELS
        return {
            "input_tokens": max(0, tokens - image_tokens),
            "pixels": sum(min(high, max(low, count)) for count in pixels),
        }

    def request(self, items: list[EmbedItem], input_type: InputType):
        inputs = [
            {
                "content": content_parts(
                    item.text, item.image, lambda uri: {"type": "image_base64", "image_base64": uri}
                )
                or [{"type": "text", "text": ""}]
            }
            for item in items
        ]
        result = self.client.multimodal_embed(
            inputs, model=self.model, input_type=input_type, truncation=True, output_dimension=self.dimension
        )
        text, pixels = getattr(result, "text_tokens", None), getattr(result, "image_pixels", None)
        if result.total_tokens is not None and text is not None and pixels is not None:
            return result.embeddings, ReportedTokens(result.total_tokens, {"input_tokens": text, "pixels": pixels})
        return result.embeddings, result.total_tokens


@EMBEDDERS.register("voyage-4-large", description="Voyage voyage-4-large embeddings", key_env="VOYAGE_API_KEY")
@EMBEDDERS.register("voyage-4", description="Voyage voyage-4 embeddings", key_env="VOYAGE_API_KEY")
@EMBEDDERS.register("voyage-4-lite", description="Voyage voyage-4-lite embeddings", key_env="VOYAGE_API_KEY")
def build(name: str, ctx: MethodContext) -> ApiEmbedder:
    return VoyageEmbedder(name, ctx)


@EMBEDDERS.register(
    "voyage-multimodal-3.5",
    description="Voyage multimodal embeddings of page images or text",
    contents=("markdown", "images"),
    key_env="VOYAGE_API_KEY",
)
def build_multimodal(name: str, ctx: MethodContext) -> ApiEmbedder:
    return VoyageMultimodalEmbedder(name, ctx)

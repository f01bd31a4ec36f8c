"""Gemini embeddings: `gemini-embedding-2` with Google's retrieval prompts, `gemini-embedding-2-noprompt` bare.

gemini-embedding-2 takes task prompts in the text rather than `task_type`:
queries `task: search result | query: {text}`, documents `title: {title or none} | text: {text}`.
Each item is passed as its own `types.Content`: the SDK merges a plain list of strings into ONE content
(one embedding for the whole list). At most 100 requests per batchEmbedContents call. The tokens Gemini
reports (`usageMetadata.promptTokenCount`) replace the estimate in the throttle.
"""

from __future__ import annotations

from ..base.context import MethodContext
from ..base.registry import EMBEDDERS
from ..base.rendering import PageStyle
from ..providers.batching import estimate_tokens
from ..providers.clients import gemini_client
from .api import ApiEmbedder
from .base import EmbedItem, InputType

MODELS = {
    "gemini-embedding-2": ("gemini-embedding-2", True),
    "gemini-embedding-2-noprompt": ("gemini-embedding-2", False),
}
QUERY_PROMPT = "task: search result | query: {text}"
DOCUMENT_PROMPT = "title: {title} | text: {text}"
MAX_REQUESTS_PER_BATCH = 100


def prompted(item: EmbedItem, input_type: InputType) -> str:
    if input_type == "query":
        return QUERY_PROMPT.format(text=item.text or "")
    return DOCUMENT_PROMPT.format(title=item.title or "none", text=item.text or "")


def reported_tokens(response) -> int | None:
    """The tokens Gemini counted for a batchEmbedContents call (`usageMetadata.promptTokenCount`), if it said.

    The throttle books these instead of the character estimate, which is far from Gemini's tokenizer."""
    usage = getattr(response, "usage_metadata", None)
    if usage is None:
        return None
    count = getattr(usage, "prompt_token_count", None) or getattr(usage, "total_token_count", None)
    if count is None and isinstance(usage, dict):
        count = usage.get("promptTokenCount") or usage.get("prompt_token_count") or usage.get("totalTokenCount")
    try:
        return int(count) if count is not None else None
    except (TypeError, ValueError):
        return None


class GeminiEmbedder(ApiEmbedder):
    provider = "gemini"

    def __init__(self, name: str, ctx: MethodContext) -> None:
        model, self.prompts = MODELS[name]
        # The document prompt has a title slot: pages' titles go there, not into the text.
        self.text_style = PageStyle.TITLE_FIELD if self.prompts else PageStyle.LABELLED
        super().__init__(name, model, ctx, max_batch_items=MAX_REQUESTS_PER_BATCH)

    def make_client(self, settings):
        return gemini_client(settings)  # kept on self: a dropped genai.Client closes its transport

    def text(self, item: EmbedItem, input_type: InputType) -> str:
        return prompted(item, input_type) if self.prompts else (item.text or "")

    def cost(self, item: EmbedItem, input_type: InputType) -> int:
        return estimate_tokens(self.text(item, input_type))

    def request(self, items: list[EmbedItem], input_type: InputType):
        from google.genai import types

        contents = [types.Content(parts=[types.Part(text=self.text(item, input_type))]) for item in items]
        config = types.EmbedContentConfig(output_dimensionality=self.dimension) if self.dimension else None
        response = self.client.models.embed_content(model=self.model, contents=contents, config=config)
        return [embedding.values for embedding in response.embeddings or []], reported_tokens(response)

    def describe(self):
        prompts = {"query": QUERY_PROMPT, "document": DOCUMENT_PROMPT} if self.prompts else None
        return {**super().describe(), "prompts": prompts}


@EMBEDDERS.register(
    "gemini-embedding-2", description="Gemini gemini-embedding-2 with retrieval prompts", key_env="GEMINI_API_KEY"
)
@EMBEDDERS.register(
    "gemini-embedding-2-noprompt", description="Gemini gemini-embedding-2 on bare text", key_env="GEMINI_API_KEY"
)
def build(name: str, ctx: MethodContext) -> GeminiEmbedder:
    return GeminiEmbedder(name, ctx)

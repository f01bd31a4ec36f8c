"""Dense retrieval: an embedder, the embedding cache and the exact index, as one Retriever.

What is embedded per page:
- `--content markdown`: the page markdown, preceded by a `title: <title>` line when the page
  has a title (the title travels inside the text, so every text embedder sees it the same way).
  Pages with empty text are embedded too (as the title line, or the empty string): dropping
  them would shrink the corpus and change what every score is computed over.
- `--content images`: the page image with its title (`EmbedItem(image=..., title=...)`); only
  embedders with `supports_images` take it, and every page must have an image.
Queries are embedded with input type "query", pages with "document", both through the cache.
"""

from __future__ import annotations

from typing import Any

from ..context import MethodContext
from ..data import Query, Run, Subset
from ..embedders.base import Embedder
from ..embedders.cache import EmbeddingCache
from ..errors import UsageError
from ..progress import progress_bar
from ..registry import EMBEDDERS
from ..rendering import ModelInput, PageStyle, query_text, render_page
from ..rendering import describe as describe_style
from .exact import ExactIndex

# Items per embedder call when the embedder does not say (API embedders split further themselves).
DEFAULT_CALL_SIZE = 1024
SEARCH_BLOCK = 256  # queries per ExactIndex call, so the search bar moves


def page_style(embedder: Embedder, content: str) -> PageStyle:
    """How pages are rendered for this embedder: the image style for page images, else its text style."""
    if content == "images":
        return PageStyle.IMAGE
    return PageStyle(getattr(embedder, "text_style", PageStyle.LABELLED))


class DenseRetriever:
    """Embed pages and queries (cached), then exact cosine top-k."""

    def __init__(self, name: str, embedder: Embedder, ctx: MethodContext):
        if ctx.content not in ("markdown", "images"):
            raise UsageError(f"unknown --content '{ctx.content}'", "choose from markdown, images")
        if ctx.content == "images" and not embedder.supports_images:
            raise UsageError(
                f"method '{name}' embeds text only and cannot take --content images",
                "use --content markdown, or an image-capable method",
            )
        self.name = name
        self.embedder = embedder
        self.ctx = ctx
        call_size = getattr(embedder, "batch_size", None) or DEFAULT_CALL_SIZE
        self.cache = EmbeddingCache.for_method(
            ctx.cache_dir, ctx.benchmark, name, embedder, ctx.usage, call_size=call_size
        )

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "content": self.ctx.content,
            "rendering": describe_style(page_style(self.embedder, self.ctx.content)),
            "index": "exact cosine (float64 rescored)",
            "embedder": self.embedder.describe(),
        }

    def embed_pages(self, subset: Subset):
        style = page_style(self.embedder, self.ctx.content)
        items = [render_page(page, style) for page in subset.pages]
        with progress_bar(f"{self.name}: embedding {subset.name} pages", len(items)) as bar:
            return self.cache.embed(items, "document", bar.advance)

    def embed_queries(self, queries: list[Query]):
        items = [ModelInput(text=query_text(query)) for query in queries]
        with progress_bar(f"{self.name}: embedding queries", len(items)) as bar:
            return self.cache.embed(items, "query", bar.advance)

    def run(self, subset: Subset, queries: list[Query], top_k: int) -> Run:
        if not queries:
            return {}
        pages = self.embed_pages(subset)
        index = ExactIndex(pages, [page.id for page in subset.pages])
        vectors = self.embed_queries(queries)
        run: Run = {}
        with progress_bar(f"{self.name}: searching {subset.name}", len(queries)) as bar:
            for start in range(0, len(queries), SEARCH_BLOCK):
                block = queries[start : start + SEARCH_BLOCK]
                for query, hits in zip(block, index.search_ids(vectors[start : start + SEARCH_BLOCK], top_k)):
                    run[query.id] = dict(hits)
                bar.advance(len(block))
        return run


def build(name: str, ctx: MethodContext) -> DenseRetriever:
    """Every registered embedder is a first-stage method: its embeddings over the exact index."""
    return DenseRetriever(name, EMBEDDERS.require(name).factory(name, ctx), ctx)

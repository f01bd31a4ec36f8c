"""Dense retrieval: an embedder, the embedding cache and the exact index, as one Retriever.

What is embedded per page:
- `--content markdown`: the page markdown, preceded by a `title: <title>` line when the page
  has a title (the title travels inside the text, so every text embedder sees it the same way).
  Pages with empty text are embedded too (as the title line, or the empty string): dropping
  them would shrink the corpus and change what every score is computed over.
- `--content images`: the page image with its title (`EmbedItem(image=..., title=...)`); only
  embedders with `supports_images` take it, and every page must have an image.
Queries are embedded with input type "query", pages with "document", both through the cache.

A corpus whose float32 matrix would take more than the index RAM limit (option `index_ram`,
`--index-ram`: bytes such as 8G, or "auto" = half the memory available to the process) is never
held in memory: the cache writes it to one matrix file and StreamedExactIndex searches every
query in one read of that file, with the same results as the in-memory ExactIndex.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..base.context import MethodContext
from ..base.data import Query, Run, Subset
from ..base.errors import UsageError
from ..base.matrix_file import MatrixDamaged, MatrixFile
from ..base.progress import progress_bar
from ..base.registry import EMBEDDERS
from ..base.rendering import ModelInput, PageStyle, query_text, render_page
from ..base.rendering import describe as describe_style
from ..embedders.base import Embedder
from ..embedders.cache import EmbeddingCache
from ..providers.plan import Plan
from .exact import ExactIndex
from .sizes import parse_size  # noqa: F401  (here since --index-ram was read here)

# Items per embedder call when the embedder does not say (API embedders split further themselves).
DEFAULT_CALL_SIZE = 1024
SEARCH_BLOCK = 256  # queries per ExactIndex call, so the search bar moves


def _read_int(path: str) -> int | None:
    try:
        with open(path) as handle:
            text = handle.read().strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None


def available_memory() -> int:
    """Bytes this process can still use: the least of the system's MemAvailable, the room left
    under an address-space limit (RLIMIT_AS), and a memory cgroup's limit minus its usage."""
    import resource

    candidates = []
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    candidates.append(int(line.split()[1]) * 1024)
    except OSError:
        candidates.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        mapped = 0
        try:
            with open("/proc/self/status") as handle:
                mapped = next((int(line.split()[1]) * 1024 for line in handle if line.startswith("VmSize:")), 0)
        except OSError:
            pass
        candidates.append(max(0, soft - mapped))
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        limit, usage = _read_int(limit_file), _read_int(usage_file)
        if limit is not None and usage is not None and limit < 1 << 60:
            candidates.append(max(0, limit - usage))
    return min(candidates)


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
        self.index_ram = parse_size(ctx.options.get("index_ram"))

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "content": self.ctx.content,
            "rendering": describe_style(page_style(self.embedder, self.ctx.content)),
            "index": "exact cosine (float64 rescored)",
            "embedder": self.embedder.describe(),
        }

    def ram_limit(self) -> int:
        """The largest corpus matrix searched in memory (bytes); larger ones are searched from disk."""
        return self.index_ram if self.index_ram is not None else available_memory() // 2

    def embed_pages(self, subset: Subset, ram_limit: int | None = None) -> np.ndarray | MatrixFile:
        """The pages' matrix; past `ram_limit` bytes, the cache's matrix file of it instead."""
        style = page_style(self.embedder, self.ctx.content)
        items = [render_page(page, style) for page in subset.pages]
        with progress_bar(f"{self.name}: embedding {subset.name} pages", len(items)) as bar:
            return self.cache.embed_matrix(items, "document", bar.advance, ram_limit=ram_limit)

    def embed_queries(self, queries: list[Query]) -> np.ndarray:
        """One row per query. Several languages are embedded one language at a time: each language's list
        is then the very list a monolingual run looks up, so a crosslingual run after a monolingual one
        (or the reverse) pays for no query twice. A whole list cached before (older runs) is used as it is."""
        items = [ModelInput(text=query_text(query)) for query in queries]
        groups: dict[str, list[int]] = {}
        for i, query in enumerate(queries):
            groups.setdefault(query.language, []).append(i)
        with progress_bar(f"{self.name}: embedding queries", len(items)) as bar:
            if len(groups) <= 1 or self.cache.cached(items, "query"):
                return self.cache.embed(items, "query", bar.advance)
            parts = {
                lang: self.cache.embed([items[i] for i in rows], "query", bar.advance) for lang, rows in groups.items()
            }
            first = next(iter(parts.values()))
            vectors = np.empty((len(items), first.shape[1]), dtype=first.dtype)
            for lang, rows in groups.items():
                vectors[rows] = parts[lang]
            return vectors

    def plan(self, subset: Subset, queries: list[Query], top_k: int, plan: Plan) -> None:
        """Count the embedding requests `run` would send for these pages and queries (cache-aware)."""
        if not queries:
            return
        style = page_style(self.embedder, self.ctx.content)
        self.cache.plan([render_page(page, style) for page in subset.pages], "document", plan, "pages")
        items = [ModelInput(text=query_text(query)) for query in queries]
        languages: dict[str, list[int]] = {}
        for i, query in enumerate(queries):
            languages.setdefault(query.language, []).append(i)
        if len(languages) <= 1 or self.cache.cached(items, "query"):
            self.cache.plan(items, "query", plan, "queries")
        else:
            for rows in languages.values():
                self.cache.plan([items[i] for i in rows], "query", plan, "queries")

    def run(self, subset: Subset, queries: list[Query], top_k: int) -> Run:
        if not queries:
            return {}
        pages = self.embed_pages(subset, self.ram_limit())
        if isinstance(pages, MatrixFile):
            return self._run_from_disk(subset, queries, pages, top_k)
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

    def _run_from_disk(self, subset: Subset, queries: list[Query], pages: MatrixFile, top_k: int) -> Run:
        """Every query in one read of the pages' matrix file. A damaged file is reported, rebuilt
        from the cache's chunks and searched again (once)."""
        from .exact_stream import StreamedExactIndex

        ids = [page.id for page in subset.pages]
        vectors = self.embed_queries(queries)
        for attempt in (1, 2):
            index = StreamedExactIndex(pages, ids)
            total = pages.rows * index.passes(len(queries), top_k)
            try:
                with progress_bar(f"{self.name}: searching {subset.name} from disk (rows)", total) as bar:
                    indices, scores = index.search(vectors, top_k, on_rows=bar.advance)
                break
            except MatrixDamaged as exc:
                if attempt == 2:
                    raise
                self.cache.discard(exc.path, exc.problem)
                rebuilt = self.embed_pages(subset, ram_limit=0)
                assert isinstance(rebuilt, MatrixFile)
                pages = rebuilt
        return {
            query.id: {ids[i]: s for i, s in zip(row_i, row_s)}
            for query, row_i, row_s in zip(queries, indices.tolist(), scores.tolist())
        }


def build(name: str, ctx: MethodContext) -> DenseRetriever:
    """Every registered embedder is a first-stage method: its embeddings over the exact index."""
    return DenseRetriever(name, EMBEDDERS.require(name).factory(name, ctx), ctx)

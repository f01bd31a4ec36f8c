"""Store search as a retrieval method: `mixedbread-markdown`, `mixedbread-images` and their `+rerank` forms.

Each query searches the subset's store; chunk hits map back to page ids and a page scores its
best chunk, so the usual page-level metrics apply. Before any query the store is checked: a
missing or incomplete store stops the run with the upload command that fixes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..base.context import MethodContext
from ..base.data import Query, Run, Subset
from ..base.errors import ConfigurationError
from ..base.registry import METHODS
from ..base.rendering import describe as describe_style
from ..providers.plan import Plan
from ..retrieval.parallel import run_queries
from .common import (
    PAGE_STYLE,
    STORE_MODEL,
    default_prefix,
    external_id_of,
    find_store,
    has_content,
    list_store_files,
    retrying,
    store_name,
    upload_command,
)

RERANK_MODEL = "mixedbread-ai/mxbai-rerank-large-v2"
DEFAULT_RERANK_TOP_K = 10


def best_chunk_per_page(chunks: list[Any], file_pages: dict[str, str]) -> dict[str, float]:
    """Page id -> its best chunk score; chunks name their page by external id or by file id."""
    scores: dict[str, float] = {}
    for chunk in chunks:
        page_id = external_id_of(chunk) or file_pages.get(getattr(chunk, "file_id", ""))
        if page_id is None:
            continue
        score = float(chunk.score)
        if page_id not in scores or score > scores[page_id]:
            scores[page_id] = score
    return scores


class StoreRetriever:
    def __init__(self, name: str, ctx: MethodContext, content: str, rerank: bool, client: Any = None) -> None:
        from ..providers.settings import provider_settings, workers_option

        self.name = name
        self.ctx = ctx
        self.content = content
        self.rerank = rerank
        self.prefix = ctx.options.get("store_prefix") or default_prefix(ctx.benchmark)
        self.rerank_top_k = int(ctx.options.get("rerank_top_k") or DEFAULT_RERANK_TOP_K)
        self.settings = provider_settings("mixedbread", ctx.options)
        if client is None and not ctx.planning:
            from ..providers.clients import mixedbread_client

            client = mixedbread_client(self.settings)
        self.client = client
        self.workers = workers_option(ctx.options, 4)
        self.call = retrying(self.settings, ctx.usage)
        self.stores: dict[str, str] = {}  # subset -> store name, for describe()

    @property
    def meaningful_depth(self) -> int | None:
        """With the store's reranker only its top-k come back: deeper cut-offs are not meaningful."""
        return self.rerank_top_k if self.rerank else None

    def check_store(self, subset: Subset) -> tuple[Any, dict[str, str]]:
        """The subset's store, verified complete; and file id -> page id for mapping hits."""
        name = store_name(self.prefix, subset.name, self.content)
        fix = upload_command(self.ctx.benchmark, subset.name, self.content, self.prefix)
        store = find_store(self.client, self.call, name)
        if store is None:
            raise ConfigurationError(
                f"store {name} for {self.ctx.benchmark}/{subset.name} does not exist", f"upload it first: {fix}"
            )
        if getattr(store, "status", None) == "expired":
            raise ConfigurationError(f"store {name} has expired", f"upload it again: {fix} --store-prefix <new>")
        files = list_store_files(self.client, self.call, store.id)
        expected = [page.id for page in subset.pages if has_content(page, self.content)]
        failed = [pid for pid in expected if pid in files and files[pid].status in ("failed", "cancelled")]
        if failed:
            raise ConfigurationError(
                f"store {name}: {len(failed)} pages failed processing (first: {', '.join(failed[:3])})",
                f"rerun the upload to retry them: {fix}",
            )
        missing = [pid for pid in expected if pid not in files or files[pid].status != "completed"]
        if missing:
            raise ConfigurationError(
                f"store {name} is incomplete: {len(expected) - len(missing)} of {len(expected)} pages ready "
                f"(first missing: {', '.join(missing[:3])})",
                f"finish the upload: {fix}",
            )
        self.stores = {subset.name: name}  # the record of a subset names its own store only
        return store, {item.id: pid for pid, item in files.items()}

    def _search_options(self, subset: Subset) -> dict[str, Any]:
        options: dict[str, Any] = {"return_metadata": True, "rerank": False}
        if self.rerank:
            with_titles = any(page.title for page in subset.pages)
            options["rerank"] = {
                "model": RERANK_MODEL,
                "top_k": self.rerank_top_k,
                "with_metadata": ["title"] if with_titles else False,
            }
        return options

    def run(self, subset: Subset, queries: list[Query], top_k: int) -> Run:
        from ..base.call_journal import CallJournal, journal_path

        store, file_pages = self.check_store(subset)
        options = self._search_options(subset)
        known = {page.id for page in subset.pages}
        # Every answered search is journaled: a killed run searches again only for queries without an answer.
        # The identity holds the store's files (their ids change when pages are uploaded again) and the options.
        identity = {"store": store.id, "files": sorted(file_pages.items()), "top_k": top_k, "options": options}
        journal = CallJournal(journal_path(Path(self.ctx.cache_dir) / "store-searches", self.name, store.id), identity)

        def search(query: Query) -> dict[str, float]:
            def paid() -> dict[str, float]:
                answer = self.call(
                    lambda: self.client.stores.search(
                        store_identifiers=[store.id], query=query.text, top_k=top_k, search_options=options
                    ),
                    "store search",
                    self.billed_units(),
                )
                return best_chunk_per_page(list(answer.data), file_pages)

            scores = journal.answer([query.text], paid)
            return {pid: float(score) for pid, score in scores.items() if pid in known}

        try:
            return run_queries(f"search {store.name}", queries, self.workers, search)
        finally:
            journal.close()

    def billed_units(self) -> dict[str, float]:
        """A store search is billed per query, at the reranking rate when the store reranks."""
        return {"store_rerank_queries" if self.rerank else "store_queries": 1}

    def plan(self, subset: Subset, queries: list[Query], top_k: int, plan: Plan) -> None:
        """One search per query (the store lookup and file listing before them are not billed)."""
        plan.add(
            "mixedbread",
            STORE_MODEL,
            "store search",
            requests=len(queries),
            items=len(queries),
            units={unit: amount * len(queries) for unit, amount in self.billed_units().items()},
            settings=self.settings,
        )
        plan.note("store searches: plus one store lookup and file listing per subset (not billed)")

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "provider": "mixedbread",
            "content": self.content,
            "store_prefix": self.prefix,
            "stores": dict(self.stores),
            "chunks_per_query": "top_k",
            "page_score": "best chunk",
            "rendering": (
                describe_style(PAGE_STYLE)
                if self.content == "markdown"
                else {"style": "image", "template": "the page image file, title as metadata"}
            ),
            "rerank": {"model": RERANK_MODEL, "top_k": self.rerank_top_k} if self.rerank else None,
            "meaningful_depth": self.meaningful_depth,
        }


@METHODS.register(
    "mixedbread-markdown",
    description="Mixedbread Store search over page markdown",
    key_env="MXBAI_API_KEY",
    options=("store_prefix",),
)
@METHODS.register(
    "mixedbread-images",
    description="Mixedbread Store search over page images",
    contents=("images",),
    key_env="MXBAI_API_KEY",
    options=("store_prefix",),
)
@METHODS.register(
    "mixedbread-markdown+rerank",
    description="Mixedbread Store search over markdown, store reranker on top",
    key_env="MXBAI_API_KEY",
    report_group="mixedbread-markdown",
    options=("store_prefix", "rerank_top_k"),
)
@METHODS.register(
    "mixedbread-images+rerank",
    description="Mixedbread Store search over images, store reranker on top",
    contents=("images",),
    key_env="MXBAI_API_KEY",
    report_group="mixedbread-images",
    options=("store_prefix", "rerank_top_k"),
)
def build(name: str, ctx: MethodContext) -> StoreRetriever:
    """Registry factory for the four store methods; the name says the content and the reranker."""
    base = name.removesuffix("+rerank")
    return StoreRetriever(name, ctx, content=base.removeprefix("mixedbread-"), rerank=name.endswith("+rerank"))

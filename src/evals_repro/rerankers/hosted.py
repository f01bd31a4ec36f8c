"""Hosted rerankers through their official SDKs: Cohere, Voyage and Mixedbread's listwise reranker.

Every call goes through the shared provider plumbing (SDK retries off, one throttle per provider,
`call_with_retries` for 429/5xx/timeouts). The full page text is sent; what the provider will
truncate (documents over its per-document context, by estimated tokens) is counted in usage
as `rerank_documents_truncated`, next to `rerank_documents` and `rerank_requests_split`. A request
is split when it exceeds the provider's aggregate limit or the whole per-minute token budget.

Per-document limits (provider documentation, tokens): Cohere rerank-v4.0 32,768 via
`max_tokens_per_doc`; Voyage rerank-2.5 / -lite 32,000 for query + document, with an aggregate of
600,000 per request (query tokens x documents + document tokens) and at most 1,000 documents;
mxbai-rerank-large-v2 8,192 (its context). `rerank-3` is taken to share rerank-2.5's limits.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import partial
from typing import Any

from ..base.context import MethodContext
from ..base.errors import ProviderError, UsageError, choices
from ..base.registry import RERANKERS
from ..providers.plan import Plan, Prior

COHERE_MODELS = ("rerank-v4.0-pro", "rerank-v4.0-fast")
VOYAGE_MODELS = ("rerank-2.5", "rerank-2.5-lite", "rerank-3")
MIXEDBREAD_MODELS = ("mixedbread-ai/mxbai-rerank-large-v2", "mixedbread-ai/mxbai-rerank-base-v2")

COHERE_MAX_TOKENS_PER_DOC = 32_768
COHERE_DOCUMENTS_PER_SEARCH = 100  # a billed search unit (cohere.com/pricing)
VOYAGE_CONTEXT_TOKENS = 32_000
VOYAGE_AGGREGATE_TOKENS = 600_000
VOYAGE_MAX_DOCUMENTS = 1_000
MIXEDBREAD_CONTEXT_TOKENS = 8_192
MAX_DOCUMENTS = 1_000  # Cohere's recommended ceiling per request; also used for Mixedbread


def _pick_model(reranker: str, model: str | None, known: tuple[str, ...]) -> str:
    if model is None:
        return known[0]
    if model not in known:
        raise UsageError(
            f"unknown model '{model}' for reranker {reranker}",
            f"choose from {choices(known)} (write +{reranker}:{known[0]}@50)",
        )
    return model


class HostedReranker(ABC):
    """Shared machinery: settings, client, batching by item count and tokens, truncation counts."""

    provider = ""
    context_tokens = 0  # query + one document; beyond it the provider truncates
    max_items = MAX_DOCUMENTS
    max_tokens = 0  # aggregate tokens per request; 0 = no aggregate limit

    def __init__(self, name: str, model: str, ctx: MethodContext, client: Any = None) -> None:
        from ..providers.settings import provider_settings, workers_option

        self.name = name
        self.model = model
        self.ctx = ctx
        self.settings = provider_settings(self.provider, ctx.options)
        self.client = client if client is not None or ctx.planning else self._make_client()
        self.workers = workers_option(ctx.options, 4)  # concurrent queries in RerankedRetriever

    @abstractmethod
    def _make_client(self) -> Any:
        """The provider's official SDK client, retries off."""

    @abstractmethod
    def _request(self, query: str, documents: list[str]) -> tuple[list[tuple[int, float]], int | None]:
        """One provider call: (index within `documents`, score) pairs, and the tokens the provider counted."""

    def _document_tokens(self, query_tokens: int, document_tokens: int) -> int:
        """What one document costs against the aggregate budget."""
        return query_tokens + document_tokens

    def _batches(self, query_tokens: int, doc_tokens: list[int]) -> tuple[list[int], list[list[int]]]:
        """Each document's cost against the aggregate budget, and the requests (document positions) to send."""
        from ..providers.batching import plan_batches
        from ..providers.throttle import batch_token_cap

        costs = [self._document_tokens(query_tokens, tokens) for tokens in doc_tokens]
        max_tokens = self.max_tokens or sum(costs) + 1
        # A request over the whole per-minute budget could never be admitted: split it like the aggregate limit.
        cap = batch_token_cap(self.settings, costs, f"rerank {self.model}", share=1.0)
        if cap is not None:
            max_tokens = min(max_tokens, cap)
        return costs, plan_batches(costs, self.max_items, max_tokens)

    def plan(
        self, query_tokens: int, doc_tokens: list[int], plan: Plan, what: str = "rerank", prior: Prior | None = None
    ) -> None:
        """Count the requests `rerank` would send for a query and documents of these estimated tokens
        (`prior`: `plan.text_prior` of the texts, for a model no run has calibrated)."""
        if not doc_tokens:
            return
        costs, batches = self._batches(query_tokens, doc_tokens)
        for positions in batches:
            documents = len(positions)
            plan.add(
                self.provider,
                self.model,
                what,
                requests=1,
                items=documents,
                tokens=plan.guess(self.provider, self.model, sum(costs[i] for i in positions), prior),
                units=partial(self.billed_units, documents),
                settings=self.settings,
                throttle_items=1,
            )

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        from ..providers.batching import estimate_tokens

        if not documents:
            return []
        query_tokens = estimate_tokens(query)
        doc_tokens = [estimate_tokens(doc) for doc in documents]
        over = sum(1 for tokens in doc_tokens if query_tokens + tokens > self.context_tokens)
        costs, batches = self._batches(query_tokens, doc_tokens)
        # Usage is diffed per subset by the runner, so these land in each result file's usage block.
        self.ctx.usage.add("rerank_documents", len(documents))
        if over:
            self.ctx.usage.add("rerank_documents_truncated", over)
        if len(batches) > 1:
            self.ctx.usage.add("rerank_requests_split", 1)
        scores: list[float | None] = [None] * len(documents)
        for positions in batches:
            batch = [documents[i] for i in positions]
            for index, score in self._call(query, batch, sum(costs[i] for i in positions)):
                if not 0 <= index < len(batch):
                    raise ProviderError(
                        f"{self.provider} rerank returned index {index} for {len(batch)} documents",
                        "the provider answered out of range; rerun, and report it if it persists",
                    )
                scores[positions[index]] = float(score)
        missing = [i for i, score in enumerate(scores) if score is None]
        if missing:
            raise ProviderError(
                f"{self.provider} rerank returned no score for {len(missing)} of {len(documents)} documents",
                "rerun; the request asked for every document",
            )
        return scores  # type: ignore[return-value]

    def _call(self, query: str, documents: list[str], tokens: int) -> list[tuple[int, float]]:
        from ..providers.retry import call_with_retries

        pairs, _ = call_with_retries(
            self.settings,
            lambda: self._request(query, documents),
            usage=self.ctx.usage,
            # one search per call: the item budget (Cohere's inputs per minute)
            # is an embedding limit, not a rerank one
            tokens=tokens,
            items=1,
            what=f"rerank {self.model}",
            reported_tokens=lambda answer: answer[1],
            model=self.model,
            bill=lambda answer: self.billed_units(len(documents), answer[1] if answer[1] is not None else tokens),
            estimate=self.billed_units(len(documents), tokens),
        )
        return pairs

    def billed_units(self, documents: int, tokens: int) -> dict[str, float]:
        """What one rerank request bills: its tokens (Cohere: searches)."""
        return {"input_tokens": tokens}

    def describe(self) -> dict[str, Any]:
        return {
            "reranker": self.name,
            "provider": self.provider,
            "model": self.model,
            "context_tokens": self.context_tokens,
            "max_documents_per_request": self.max_items,
            "max_request_tokens": self.max_tokens or None,
            "truncation": "counted in usage as rerank_documents_truncated (estimated tokens over context)",
        }


class CohereReranker(HostedReranker):
    provider = "cohere"
    context_tokens = COHERE_MAX_TOKENS_PER_DOC

    def _make_client(self) -> Any:
        from ..providers.clients import cohere_client

        return cohere_client(self.settings)

    def _request(self, query: str, documents: list[str]) -> tuple[list[tuple[int, float]], int | None]:
        response = self.client.rerank(
            model=self.model,
            query=query,
            documents=documents,
            top_n=len(documents),
            max_tokens_per_doc=COHERE_MAX_TOKENS_PER_DOC,
        )
        billed = response.meta.billed_units if response.meta else None
        if billed is not None and billed.search_units:
            self.ctx.usage.add("cohere_search_units", billed.search_units)
        return [(r.index, r.relevance_score) for r in response.results], None

    def _document_tokens(self, query_tokens: int, document_tokens: int) -> int:
        return query_tokens + min(document_tokens, COHERE_MAX_TOKENS_PER_DOC)

    def billed_units(self, documents: int, tokens: int) -> dict[str, float]:
        """Cohere bills rerank by search: one query with up to 100 documents."""
        return {"searches": -(-documents // COHERE_DOCUMENTS_PER_SEARCH)}


class VoyageReranker(HostedReranker):
    provider = "voyage"
    context_tokens = VOYAGE_CONTEXT_TOKENS
    max_items = VOYAGE_MAX_DOCUMENTS
    max_tokens = VOYAGE_AGGREGATE_TOKENS

    def __init__(
        self, name: str, model: str, ctx: MethodContext, client: Any = None, max_request_tokens: int | None = None
    ) -> None:
        super().__init__(name, model, ctx, client)
        if max_request_tokens:
            self.max_tokens = int(max_request_tokens)

    def _make_client(self) -> Any:
        from ..providers.clients import voyage_client

        return voyage_client(self.settings)

    def _request(self, query: str, documents: list[str]) -> tuple[list[tuple[int, float]], int | None]:
        response = self.client.rerank(query, documents, self.model, top_k=None, truncation=True)
        return [(r.index, r.relevance_score) for r in response.results], response.total_tokens


class MixedbreadReranker(HostedReranker):
    provider = "mixedbread"
    context_tokens = MIXEDBREAD_CONTEXT_TOKENS

    def _make_client(self) -> Any:
        from ..providers.clients import mixedbread_client

        return mixedbread_client(self.settings)

    def _request(self, query: str, documents: list[str]) -> tuple[list[tuple[int, float]], int | None]:
        response = self.client.rerank(
            model=self.model, query=query, input=documents, top_k=len(documents), return_input=False
        )
        tokens = response.usage.total_tokens if response.usage else None
        return [(item.index, item.score) for item in response.data], tokens


_CLASSES: dict[str, tuple[Callable[..., HostedReranker], tuple[str, ...]]] = {
    "cohere": (CohereReranker, COHERE_MODELS),
    "voyage": (VoyageReranker, VOYAGE_MODELS),
    "mixedbread": (MixedbreadReranker, MIXEDBREAD_MODELS),
}


@RERANKERS.register(
    "cohere",
    description="Cohere rerank-v4.0-pro (or :rerank-v4.0-fast)",
    key_env="COHERE_API_KEY",
    models=COHERE_MODELS,
    study_models={"cohere-pro": "rerank-v4.0-pro", "cohere-fast": "rerank-v4.0-fast"},
)
@RERANKERS.register(
    "voyage",
    description="Voyage rerank-2.5 (or :rerank-2.5-lite, :rerank-3)",
    key_env="VOYAGE_API_KEY",
    models=VOYAGE_MODELS,
    study_models={"voyage": "rerank-2.5", "voyage-lite": "rerank-2.5-lite"},
)
@RERANKERS.register(
    "mixedbread",
    description="Mixedbread listwise mxbai-rerank-large-v2 via /v1/reranking",
    key_env="MXBAI_API_KEY",
    models=MIXEDBREAD_MODELS,
    study_models={"mixedbread": "mixedbread-ai/mxbai-rerank-large-v2"},
)
def build(name: str, model: str | None, ctx: MethodContext) -> HostedReranker:
    """Registry factory: a missing key fails here, before any work."""
    cls, models = _CLASSES[name]
    chosen = _pick_model(name, model, models)
    if name == "voyage":
        return VoyageReranker(name, chosen, ctx, max_request_tokens=ctx.options.get("voyage_rerank_max_tokens"))
    return cls(name, chosen, ctx)

"""`rerank-api:<model>`: a cross-encoder behind a `/rerank` (Cohere/Jina style: vLLM, Infinity) or `/score`
(vLLM) endpoint, on one server or several replicas; `+rerank-api:<model>@50` in `run`, and in `rerank-study`.

Where: `--rerank-base-url a[,b,...]` (run option `rerank_base_url`), else `RERANK_API_BASE_URLS`, else
`RERANK_API_BASE_URL`; the endpoint path is appended (`<url>/rerank`, `<url>/score`). A TEI server (known by its
`/info`) gets TEI's own `/rerank` body (`texts`), `/tokenize` and `/decode`. The key, `RERANK_API_KEY` or else
`VLLM_API_KEY` (`providers.keys.server_key`), is sent as a Bearer token on every request to every replica.
Replicas share the calls least-in-flight, and a replica that dies has its call sent to another, with one warning
line naming it (`providers.replicas`).

Before any work every replica's model list (`/v1/models`, else `/models`; TEI: `/info`) must name the model, all
alike; what it reports (id, root, max_model_len, ...) is recorded with the scores. Documents are cut only at
their end, by the client, to a per-document token limit: `--rerank-max-tokens` if given, and never more
than fits the server's reported context beside the query (max_model_len - query tokens -
`PAIR_SPECIAL_TOKENS`). Only a document that could exceed it is measured (`fitting`): one whose UTF-8 bound fits
is sent unmeasured; the others by the server's own `POST /tokenize` (vLLM, TEI), a cut `POST /detokenize`d from
its first tokens so that what is scored is exactly the first N tokens; on a server without /tokenize (Infinity,
other Cohere/Jina-style servers) by the model's tokenizer.json on this machine; with neither, such a document is
refused by name. The query is never cut. Cut documents are counted in usage as `rerank_documents_truncated`, as
for the local rerankers. Why the client cuts: vLLM's own `truncate_prompt_tokens` cuts the end of the whole
prompt (a template's suffix with it), `max_tokens_per_doc` cannot say which documents it cut, and Infinity cuts
the longest text of a pair (the query too) without a word.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..base.context import MethodContext
from ..base.errors import ConfigurationError, ProviderError, UsageError, choices
from ..base.registry import RERANKERS
from ..providers.errors_map import MalformedAnswer
from ..providers.plan import Plan
from ..providers.replicas import (
    TEI_OWNER,
    Replica,
    ReplicaPool,
    connection_lost,
    identify_served_model,
    parse_replica_urls,
    record_identity,
    tei_card,
)
from ..providers.settings import ProviderSettings
from .base import ScoredAttempt, plan_self_hosted, positive_option, rerank_with_retries
from .fitting import Limits, Measurer, find_local_tokenizer, fit_documents

PROVIDER = "rerank-api"  # usage keys rerank-api_attempts, ...; the study reads them by this name
ENDPOINTS = ("rerank", "score", "tei")  # tei: TEI's own /rerank body (`texts`); chosen by default on a TEI server
ENDPOINT_PATHS = {"rerank": "POST /rerank", "score": "POST /score", "tei": "POST /rerank (TEI)"}
URLS_ENV, URL_ENV = "RERANK_API_BASE_URLS", "RERANK_API_BASE_URL"
PAIR_SPECIAL_TOKENS = 4  # a cross-encoder pair adds at most this many: <s> q </s></s> d </s> (XLM-R, bge-reranker)
DEFAULT_TIMEOUT = 300.0
DEFAULT_MAX_ATTEMPTS = 6
TOKENIZE_WORKERS = 8
NO_ROUTE = (404, 405, 501)  # what a server without /tokenize answers a POST there

_POOLS: dict[tuple[str, tuple[str, ...]], ReplicaPool] = {}
_LOCK = threading.Lock()
_TOKENIZE: ThreadPoolExecutor | None = None


def _pool(model: str, urls: list[str]) -> ReplicaPool:
    with _LOCK:
        return _POOLS.setdefault((model, tuple(urls)), ReplicaPool(urls))


def _tokenize_pool() -> ThreadPoolExecutor:
    global _TOKENIZE
    with _LOCK:
        if _TOKENIZE is None:
            _TOKENIZE = ThreadPoolExecutor(max_workers=TOKENIZE_WORKERS, thread_name_prefix="rerank-api-tokenize")
        return _TOKENIZE


def rerank_urls(options: dict[str, Any]) -> list[str]:
    import os

    from ..providers.keys import load_dotenv_once

    given = options.get("rerank_base_url")
    if given:
        return parse_replica_urls(str(given), "--rerank-base-url", "http://127.0.0.1:8000")
    load_dotenv_once()
    for env in (URLS_ENV, URL_ENV):
        raw = os.environ.get(env, "").strip()
        if raw:
            return parse_replica_urls(raw, env, "http://127.0.0.1:8000")
    raise ConfigurationError(
        "rerank-api needs the server's URL",
        f"pass --rerank-base-url http://host:8000[,http://host2:8000] or set {URLS_ENV}",
    )


def _root(url: str) -> str:
    """The server root, where vLLM serves /tokenize and /detokenize (a base URL may end with /v1)."""
    return url[: -len("/v1")] if url.endswith("/v1") else url


class ServerTokenizer:
    """The server's own tokenizer (`/tokenize`, and `/detokenize` or TEI's `/decode` for a cut): a document cut
    is exactly its first N tokens as the server counts them."""

    source = "the server's /tokenize"

    def __init__(self, reranker: ApiReranker) -> None:
        self.reranker = reranker

    def count(self, text: str) -> int:
        return len(self.reranker._tokens(text))

    def fit(self, text: str, limit: int) -> tuple[str, bool]:
        ids = self.reranker._tokens(text)
        if len(ids) <= limit:
            return text, False
        return self.reranker._text(ids[:limit]), True


class ApiReranker:
    """A Reranker on `/rerank` or `/score` replicas."""

    def __init__(self, model: str, ctx: MethodContext) -> None:
        import httpx

        from ..providers.keys import server_key

        self.name = PROVIDER
        self.model = model
        self.ctx = ctx
        options = {k.replace("-", "_"): v for k, v in ctx.options.items()}
        self.urls = rerank_urls(options)
        given = options.get("rerank_endpoint")
        if given is not None and str(given) not in ENDPOINTS:
            raise UsageError(f"--rerank-endpoint '{given}' is not known", f"choose from {choices(ENDPOINTS)}")
        self.max_tokens: int | None = positive_option(options, "rerank_max_tokens", None, int)
        self.settings = ProviderSettings(
            provider=PROVIDER,
            tokens_per_minute=0,
            requests_per_minute=0,
            min_interval=0.0,
            timeout=positive_option(options, "timeout", DEFAULT_TIMEOUT),
            max_attempts=int(positive_option(options, "max_attempts", DEFAULT_MAX_ATTEMPTS, int)),
            base_url=None,
            max_batch_items=0,
            max_batch_tokens=0,
        )
        self.key = server_key(PROVIDER)  # RERANK_API_KEY, else VLLM_API_KEY; redacted everywhere (keys.redact)
        self.client = httpx.Client(timeout=self.settings.timeout, headers=self.key.headers())
        self.pool = _pool(model, self.urls)
        self.workers = int(options.get("workers") or 4)
        self.workers = max(self.workers, 2 * len(self.urls))  # `run` scores this many queries at once
        self.max_documents: int | None = None  # documents per request the server takes (TEI: max_client_batch_size)
        self.identity: dict[str, Any] = self._identify() if not ctx.planning else self._identify_for_plan()
        record_identity(ctx.options, f"{PROVIDER}:{model}", self.identity)
        self.tei = self.identity.get("owned_by") == TEI_OWNER  # its own /tokenize and /decode shapes
        self.endpoint = str(given) if given is not None else "tei" if self.tei else "rerank"
        self.context_tokens: int | None = self.identity.get("max_model_len")
        if self.max_tokens is None and self.context_tokens is None and not ctx.planning:
            raise UsageError(
                f"{self.urls[0]} reports no maximum length for {model}, so documents cannot be cut to fit",
                "give --rerank-max-tokens N (tokens kept per document)",
            )
        self.measurer: Measurer | None = None if ctx.planning else self._measurer()

    # -- the servers ------------------------------------------------------------------------------
    def _identify_for_plan(self) -> dict[str, Any]:
        """`--plan`: the identity if the servers answer (a server of your own costs nothing, and may not be up
        yet: then the model name alone)."""
        from ..base.errors import EvalsError

        try:
            return self._identify()
        except EvalsError:
            return {"id": self.model}

    def _models(self, url: str) -> list[dict[str, Any]]:
        import httpx

        last = 0
        for path in ("/v1/models", "/models"):
            try:
                response = self.client.get(url + path, timeout=30.0)
            except httpx.HTTPError as exc:
                raise UsageError(
                    f"cannot reach {url} ({type(exc).__name__}: {exc})",
                    f"start the server, or fix --rerank-base-url / {URLS_ENV}",
                ) from None
            last = response.status_code
            if response.status_code == 404:
                continue
            if response.status_code in (401, 403):
                raise ConfigurationError(f"{url}{path} refused the request (HTTP {last})", self.key.hint())
            try:
                response.raise_for_status()
                cards = response.json()["data"]
                return [card for card in cards if isinstance(card, dict)]
            except (httpx.HTTPError, ValueError, KeyError, TypeError):
                break
        tei = self._tei_card(url)
        if tei is not None:
            return [tei]
        raise UsageError(
            f"{url} lists no models (HTTP {last} at /v1/models and /models, no TEI /info): not a vLLM, TEI or "
            "Infinity server",
            f"check --rerank-base-url / {URLS_ENV}",
        )

    def _tei_card(self, url: str) -> dict[str, Any] | None:
        return tei_card(url, lambda info_url: self.client.get(info_url, timeout=30.0), self.key.hint())

    def _identify(self) -> dict[str, Any]:
        identity, cards = identify_served_model(self.urls, self.model, self._models, PROVIDER)
        for card in cards:
            batch = card.get("max_client_batch_size")
            if isinstance(batch, int) and batch > 0:
                self.max_documents = min(batch, self.max_documents or batch)
        return identity

    def _post(self, url: str, body: dict[str, Any]) -> Any:
        response = self.client.post(url, json=body)
        response.raise_for_status()  # classified by providers.errors_map (httpx)
        return response.json()

    def _call(self, path: str, body: dict[str, Any], root: bool = False) -> Any:
        def send(replica: Replica) -> Any:
            return self._post((_root(replica.url) if root else replica.url) + path, body)

        return self.pool.call(send, connection_lost, f"rerank-api {self.model}")

    # -- fitting documents ------------------------------------------------------------------------
    def _tokens(self, text: str) -> list[int]:
        body: dict[str, Any] = (
            {"inputs": text, "add_special_tokens": False}
            if self.tei
            else {"model": self.model, "prompt": text, "add_special_tokens": False}
        )
        answer = self._call("/tokenize", body, True)
        if self.tei:  # [[{"id", "text", "special", "start", "stop"}, ...]]
            ok = isinstance(answer, list) and len(answer) == 1 and isinstance(answer[0], list)
            tokens = [t.get("id") for t in answer[0] if isinstance(t, dict)] if ok else None
        else:  # {"count", "max_model_len", "tokens", "token_strs"}
            tokens = answer.get("tokens") if isinstance(answer, dict) else None
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise MalformedAnswer("/tokenize answered without tokens")
        return tokens

    def _text(self, ids: list[int]) -> str:
        """The text of token ids, decoded by the server (vLLM /detokenize, TEI /decode)."""
        if self.tei:
            answer = self._call("/decode", {"ids": ids, "skip_special_tokens": False}, True)
            text = answer[0] if isinstance(answer, list) and len(answer) == 1 else None
        else:
            answer = self._call("/detokenize", {"model": self.model, "tokens": ids}, True)
            text = answer.get("prompt") if isinstance(answer, dict) else None
        if not isinstance(text, str):
            raise MalformedAnswer("the server decoded token ids to no text")
        return text

    def _measurer(self) -> Measurer | None:
        """The server's /tokenize when it has one that answers token ids (asked once, with a one-word text), else
        the model's tokenizer on this machine, else None (documents are then only bounded: `fitting.token_bound`)."""
        import httpx

        try:
            self._tokens("a")
            return ServerTokenizer(self)
        except httpx.HTTPStatusError as exc:
            status = exc.response.status_code
            if status in (401, 403):
                raise ConfigurationError(
                    f"{self.urls[0]}/tokenize refused the request (HTTP {status})", self.key.hint()
                ) from None
            if status not in NO_ROUTE:
                raise ProviderError(
                    f"rerank-api {self.model}: /tokenize answered HTTP {status}", "check the server's log, then rerun"
                ) from None
        except (MalformedAnswer, ValueError):  # a /tokenize of another kind (no token ids, or not JSON): not used
            pass
        return find_local_tokenizer(self.model, self.identity)

    def _fit(self, query: str, documents: list[str]) -> tuple[list[str], int]:
        """The documents as sent (each cut at its end to the limit) and how many were cut."""
        place = self.identity.get("root") or self.model.partition("@")[0]
        return fit_documents(
            f"rerank-api {self.model}",
            query,
            documents,
            Limits(self.max_tokens, self.context_tokens, PAIR_SPECIAL_TOKENS),
            self.measurer,
            lambda fit, texts: _tokenize_pool().map(fit, texts),
            f"serve the model where /tokenize exists (vLLM, TEI), or cache its tokenizer on this machine "
            f"(`hf download {place} tokenizer.json`), or shorten the page",
        )

    # -- scoring ----------------------------------------------------------------------------------
    def _scores(self, query: str, documents: list[str]) -> tuple[list[float], int | None]:
        if self.endpoint == "tei":  # TEI: [{"index", "score"}, ...], sorted by score
            body = {"query": query, "texts": documents, "truncate": False, "raw_scores": False}
            answer = self._call("/rerank", body)
            items, key = answer, "score"
            answer = {}
        elif self.endpoint == "rerank":
            answer = self._call(
                "/rerank", {"model": self.model, "query": query, "documents": documents, "top_n": len(documents)}
            )
            items, key = (answer.get("results") if isinstance(answer, dict) else None), "relevance_score"
        else:
            answer = self._call("/score", {"model": self.model, "text_1": query, "text_2": documents})
            items, key = (answer.get("data") if isinstance(answer, dict) else None), "score"
        where = ENDPOINT_PATHS[self.endpoint]
        if not isinstance(items, list):
            raise MalformedAnswer(f"{where} answered no list of scores")  # a body cut short: retried
        scores: list[float | None] = [None] * len(documents)
        for item in items:  # a whole answer that is wrong fails at once: asking again gets the same answer
            index = item.get("index") if isinstance(item, dict) else None
            value = item.get(key) if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < len(documents) or scores[index] is not None:
                raise self._wrong(f"{where} answered index {index!r} for {len(documents)} documents")
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise self._wrong(f"{where} answered score {value!r} for document {index}")
            scores[index] = float(value)
        if any(score is None for score in scores):
            raise self._wrong(f"{where} scored {len(items)} of {len(documents)} documents")
        usage = (answer.get("usage") if isinstance(answer, dict) else None) or {}
        tokens = usage.get("total_tokens") or usage.get("prompt_tokens")
        return [float(s) for s in scores if s is not None], tokens if isinstance(tokens, int) else None

    def _wrong(self, what: str) -> ProviderError:
        """An answer that arrived whole but breaks the rerank contract: not retried (exit 3, a server's failure)."""
        return ProviderError(
            f"rerank-api {self.model}: {what} (an answer that breaks the rerank contract; not retried)",
            "check the server and the model it serves (--rerank-endpoint must match its API)",
        )

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        if not documents:
            return []

        def attempt() -> ScoredAttempt:
            fitted, cut = self._fit(query, documents)
            step = self.max_documents or len(fitted)
            scores: list[float] = []
            counted: list[int] = []
            for start in range(0, len(fitted), step):
                part, tokens = self._scores(query, fitted[start : start + step])
                scores += part
                if tokens is not None:
                    counted.append(tokens)
            return scores, sum(counted) if counted else None, cut

        return rerank_with_retries(
            self.settings, self.ctx.usage, len(documents), attempt, f"rerank {self.model}", self.model
        )

    def plan(
        self, query_tokens: int, doc_tokens: list[int], plan: Plan, what: str = "rerank", prior: Any = None
    ) -> None:
        """The requests `rerank` sends (`max_client_batch_size` documents each where the server has one):
        self-hosted, no price."""
        plan_self_hosted(self, query_tokens, doc_tokens, plan, what, self.max_documents)

    def _lengths(self) -> str:
        """How documents that may not fit are measured (recorded with the scores)."""
        if self.measurer is not None:
            return self.measurer.source
        return "not asked (a plan sends nothing)" if self.ctx.planning else "UTF-8 bound only (no tokenizer)"

    def describe(self) -> dict[str, Any]:
        return {
            "reranker": PROVIDER,
            "model": self.model,
            "endpoint": ENDPOINT_PATHS[self.endpoint],
            "server_model": self.identity,
            "max_tokens_per_document": self.max_tokens,
            "context_tokens": self.context_tokens,
            "truncation": "document end only, to --rerank-max-tokens and what fits the context beside the query; "
            "a document whose UTF-8 bound fits is not measured; counted in usage as rerank_documents_truncated",
            "lengths": self._lengths(),
        }


@RERANKERS.register(
    "rerank-api",  # PROVIDER, spelled out so that listing the names reads it from this source without an import
    description="any /rerank (vLLM, Infinity) or /score (vLLM) server: +rerank-api:<model>@50, --rerank-base-url",
)
def build(name: str, model: str | None, ctx: MethodContext) -> ApiReranker:
    """Registry factory: the servers are asked for the model here, before any work."""
    if not model:
        raise UsageError(
            "reranker 'rerank-api' needs the served model's name",
            "write +rerank-api:<model>@50, e.g. +rerank-api:BAAI/bge-reranker-v2-m3@50",
        )
    return ApiReranker(model, ctx)

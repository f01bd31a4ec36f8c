"""`openai:<model>`: embeddings from any OpenAI-compatible `/v1/embeddings` server (OpenAI, vLLM, TEI, Infinity, Ollama).

Where: `--base-url a[,b,...]` (run option `base_url`), else `OPENAI_BASE_URLS` (comma-separated), else
`OPENAI_BASE_URL`, else OpenAI itself; every URL includes `/v1`. Several URLs are replicas of one model:
each request goes to the live one with the fewest requests in flight, and a replica that refuses or drops
the connection has its request sent to another at once (`providers.replicas`). `OPENAI_API_KEY` is needed
for OpenAI only; a server of your own started with a key gets `VLLM_API_KEY` (else `OPENAI_API_KEY`) on every
request to every replica (`providers.clients.openai_key`).

Before any work every replica's `GET /v1/models` (TEI, which lists none: its `/info`) must name the model,
and all replicas must describe it the same way; that description (id, root, parent, owner, max_model_len,
TEI's model sha: what the server reports, never where it runs) is part of the embedding cache key, with the prefixes and `--dimensions`, so a server
that starts serving another checkpoint under the same name is never served old vectors.

Prefixes: `--prefix-style e5|bge|nomic` ("query: "/"passage: "; BGE's English query instruction and no
document prefix; "search_query: "/"search_document: "), or `--query-prefix` / `--document-prefix`
(which win over the style). Requests: at most `--batch-size` inputs (default 128) and OpenAI's 300,000
tokens. Budgets: `--openai-tpm` / `--openai-rpm`; by default OpenAI's tier-1 embedding limits (1,000,000
tokens and 3,000 requests per minute) against OpenAI, and none against a server of your own.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from ..base.context import MethodContext
from ..base.errors import ConfigurationError, UsageError, choices
from ..base.registry import EMBEDDERS
from ..providers.batching import estimate_tokens
from ..providers.errors_map import MalformedAnswer
from ..providers.replicas import (
    Replica,
    ReplicaPool,
    identify_served_model,
    parse_replica_urls,
    record_identity,
    tei_card,
)
from ..providers.settings import OPENAI_EMBEDDING_BUDGET, ProviderSettings
from .api import ApiEmbedder
from .base import EmbedItem, InputType

PREFIX_STYLES: dict[str, tuple[str, str]] = {
    "none": ("", ""),
    "e5": ("query: ", "passage: "),
    "bge": ("Represent this sentence for searching relevant passages: ", ""),
    "nomic": ("search_query: ", "search_document: "),
}
DEFAULT_BATCH_SIZE = 128
MAX_BATCH_ITEMS = 2048  # OpenAI: at most 2,048 inputs per request
MAX_REQUEST_TOKENS = 300_000  # OpenAI: at most 300,000 tokens summed over a request's inputs
OPENAI_EMBED_TPM, OPENAI_EMBED_RPM = OPENAI_EMBEDDING_BUDGET  # OpenAI tier 1, text-embedding-3-*
URLS_ENV = "OPENAI_BASE_URLS"
OPTIONS = ("base_url", "dimensions", "prefix_style", "query_prefix", "document_prefix", "batch_size")

_POOLS: dict[tuple[str, tuple[str, ...]], ReplicaPool] = {}
_POOLS_LOCK = threading.Lock()


def replica_pool(model: str, urls: list[str]) -> ReplicaPool:
    """One pool per model and URL list per process: every embedder instance and thread shares the load counts."""
    with _POOLS_LOCK:
        key = (model, tuple(urls))
        if key not in _POOLS:
            _POOLS[key] = ReplicaPool(urls)
        return _POOLS[key]


def base_urls(options: dict[str, Any]) -> list[str]:
    """The replicas: `--base-url`, else OPENAI_BASE_URLS, else OPENAI_BASE_URL, else OpenAI."""
    import os

    from ..providers.clients import OPENAI_DEFAULT_BASE_URL
    from ..providers.keys import load_dotenv_once

    given = options.get("base_url")
    if given:
        return parse_replica_urls(given if isinstance(given, list) else str(given), "--base-url")
    load_dotenv_once()
    for env in (URLS_ENV, "OPENAI_BASE_URL"):
        raw = os.environ.get(env, "").strip()
        if raw:
            return parse_replica_urls(raw, env)
    return [OPENAI_DEFAULT_BASE_URL]


def _whole(options: dict[str, Any], key: str, minimum: int, maximum: int | None = None) -> int | None:
    value = options.get(key)
    if value is None:
        return None
    flag = "--" + key.replace("_", "-")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{flag} {value!r} is not a whole number", f"give a number >= {minimum}") from None
    if number < minimum or (maximum is not None and number > maximum):
        top = f" and <= {maximum}" if maximum is not None else ""
        raise UsageError(f"{flag} {number} is out of range", f"give a number >= {minimum}{top}")
    return number


def prefixes(options: dict[str, Any]) -> tuple[str, str]:
    """(query prefix, document prefix) from `--prefix-style` and the explicit prefixes, which win."""
    style = str(options.get("prefix_style") or "none")
    if style not in PREFIX_STYLES:
        raise UsageError(f"--prefix-style '{style}' is not known", f"choose from {choices(PREFIX_STYLES)}")
    query, document = PREFIX_STYLES[style]
    if options.get("query_prefix") is not None:
        query = str(options["query_prefix"])
    if options.get("document_prefix") is not None:
        document = str(options["document_prefix"])
    return query, document


def _is_down(exc: BaseException) -> bool:
    """A refused or dropped connection (the replica is gone), not a timeout (it may be busy)."""
    import openai

    return isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError)


class OpenAIEmbedder(ApiEmbedder):
    provider = "openai"

    def __init__(self, name: str, ctx: MethodContext) -> None:
        from ..providers.clients import openai_self_hosted

        model = name.partition(":")[2].strip()
        if not model:
            raise UsageError(
                f"method '{name}' names no model", "write openai:<model>, e.g. openai:text-embedding-3-large"
            )
        options = {k.replace("-", "_"): v for k, v in ctx.options.items()}
        self.urls = base_urls(options)
        self.query_prefix, self.document_prefix = prefixes(options)
        batch = _whole(options, "batch_size", 1, MAX_BATCH_ITEMS) or DEFAULT_BATCH_SIZE
        super().__init__(name, model, ctx, dimension=_whole(options, "dimensions", 1))
        own_server = all(openai_self_hosted(url) for url in self.urls)
        tpm, rpm = (0, 0) if own_server else (OPENAI_EMBED_TPM, OPENAI_EMBED_RPM)  # unless --openai-tpm/-rpm
        given = self.settings
        self.settings = replace(
            given,
            tokens_per_minute=given.tokens_per_minute if options.get("openai_tpm") is not None else tpm,
            requests_per_minute=given.requests_per_minute if options.get("openai_rpm") is not None else rpm,
            max_batch_items=batch,
            max_batch_tokens=MAX_REQUEST_TOKENS,
        )
        self.workers = max(self.workers, 2 * len(self.urls))  # keep every replica busy
        self.own_server = own_server
        self.pool = replica_pool(model, self.urls)
        self._width: int | None = None
        self._width_lock = threading.Lock()
        self.identity = self._identify() if not ctx.planning else self._identify_for_plan()
        record_identity(ctx.options, name, self.identity)

    def paid(self) -> bool:
        return not self.own_server  # OpenAI bills; a server of your own costs nothing per request

    def _identify_for_plan(self) -> dict[str, Any]:
        """`--plan` sends nothing paid, but the cache key needs the identity: ask the servers when that needs no
        key; when it cannot be had, the model name alone (the plan then counts nothing as cached)."""
        from ..base.errors import EvalsError

        try:
            self.client = self.make_client(self.settings)
            return self._identify()
        except EvalsError:
            self.client = None
            return {"id": self.model}

    # -- clients and the server's identity ----------------------------------------------------------
    def make_client(self, settings: ProviderSettings) -> dict[str, Any]:
        from ..providers.clients import openai_client, openai_key

        return {url: openai_client(settings, url, openai_key(url)) for url in self.urls}

    def _models(self, url: str) -> list[dict[str, Any]]:
        import openai

        try:
            return [card.model_dump() for card in self.client[url].models.list()]
        except openai.APIStatusError as exc:
            tei = self._tei_card(url) if exc.status_code == 404 else None
            if tei is not None:
                return [tei]
            if exc.status_code in (401, 403):
                raise ConfigurationError(
                    f"{url} refused the request (HTTP {exc.status_code}) when listing models", self._key_hint(url)
                ) from None
            raise UsageError(
                f"{url}/models answered HTTP {exc.status_code}: not an OpenAI-compatible server",
                "check --base-url / OPENAI_BASE_URL(S): the URL ends with /v1",
            ) from None
        except openai.APIConnectionError as exc:
            raise UsageError(
                f"cannot reach {url} ({type(exc).__name__}: {exc})",
                "start the server, or fix --base-url / OPENAI_BASE_URL(S) (with /v1)",
            ) from None
        except (openai.APIResponseValidationError, ValueError, TypeError) as exc:
            raise UsageError(
                f"{url}/models answered something that is not a model list ({type(exc).__name__})",
                "check --base-url / OPENAI_BASE_URL(S): the URL ends with /v1",
            ) from None

    def _key_hint(self, url: str) -> str:
        from ..providers.clients import openai_key_required
        from ..providers.keys import server_key

        if openai_key_required(url):
            return "check OPENAI_API_KEY"
        return server_key("openai").hint()

    def _tei_card(self, url: str) -> dict[str, Any] | None:
        """TEI lists no models: its /info stands in for the card (asked with the server's key, if any)."""
        import httpx

        from ..providers.clients import openai_key

        key = openai_key(url)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return tei_card(url, lambda info_url: httpx.get(info_url, timeout=30.0, headers=headers), self._key_hint(url))

    def _identify(self) -> dict[str, Any]:
        """The model as every replica's /v1/models describes it; one line naming the replica that differs."""
        return identify_served_model(self.urls, self.model, self._models, self.provider)[0]

    # -- one request ----------------------------------------------------------------------------------
    def cost(self, item: EmbedItem, input_type: InputType) -> int:
        return estimate_tokens(self._prefix(input_type) + (item.text or ""))

    def _prefix(self, input_type: InputType) -> str:
        return self.query_prefix if input_type == "query" else self.document_prefix

    def request(self, items: list[EmbedItem], input_type: InputType) -> tuple[list, int | None]:
        prefix = self._prefix(input_type)
        texts = [prefix + (item.text or "") for item in items]
        extra = {"dimensions": self.dimension} if self.dimension else {}

        def send(replica: Replica):
            return replica, self.client[replica.url].embeddings.create(model=self.model, input=texts, **extra)

        replica, response = self.pool.call(send, _is_down, f"openai {self.model} embed")
        data = sorted(response.data or [], key=lambda d: d.index)
        if [d.index for d in data] != list(range(len(texts))):
            raise MalformedAnswer(f"asked for {len(texts)} embeddings, got indices {[d.index for d in data][:8]}")
        rows = [d.embedding for d in data]
        self._check_width(replica.url, len(rows[0]) if rows else 0)
        usage = response.usage
        return rows, (usage.prompt_tokens if usage is not None and usage.prompt_tokens else None)

    def _check_width(self, url: str, width: int) -> None:
        with self._width_lock:
            if self._width is None:
                self._width = width
            elif width != self._width:
                raise ConfigurationError(
                    f"openai:{self.model}: {url} answered {width}-wide embeddings after {self._width}-wide ones "
                    "in this run: the server changed models mid-run",
                    "make every replica serve one checkpoint, then rerun (vectors already cached are kept)",
                )

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "server_model": self.identity,
            "query_prefix": self.query_prefix,
            "document_prefix": self.document_prefix,
        }


@EMBEDDERS.register_prefix(
    "openai:",
    "openai:<model>",
    description="any OpenAI-compatible /v1/embeddings server (OpenAI, vLLM, TEI, Infinity): --base-url a,b",
    options=OPTIONS,
)
def build(name: str, ctx: MethodContext) -> OpenAIEmbedder:
    """Registry factory: the servers are asked for the model here, before any work."""
    return OpenAIEmbedder(name, ctx)

"""Per-provider limits, timeouts and base URLs, with documented defaults overridable per run.

Defaults (per provider, per minute; override with the `run` flags that land in `MethodContext.options`):

| provider   | tokens/min | requests/min | items/min | batch items | batch tokens | source |
|------------|-----------:|-------------:|----------:|------------:|-------------:|--------|
| voyage     | 3,000,000  | 2,000        | -         | 1,000       | 120,000      | Voyage tier 1 for voyage-4-large (the strictest text model); batch limits of the embeddings endpoint |
| cohere     | -          | 2,000        | 2,000     | 96          | 500,000      | Cohere production: Embed 2,000 inputs/min; 96 texts per call |
| gemini     | 1,000,000  | 3,000        | -         | 100         | 500,000      | Gemini API tier 1 for embeddings; at most 100 requests per batchEmbedContents |
| mixedbread | 1,000,000  | 300          | -         | 1,000       | 500,000      | no published figure: conservative guess |
| openai     | 500,000    | 500          | -         | 1           | -            | OpenAI tier 1 for GPT-5-class chat models; any OpenAI-compatible server (a vLLM replica: set both to 0) |

`0` means "no budget" for a per-minute limit. Timeout 120 s, 6 attempts, no minimum interval.
Option keys read: `{provider}_tpm`, `{provider}_rpm`, `{provider}_ipm`, `{provider}_interval` (seconds),
`timeout` (seconds), `max_attempts`. Base URLs come from `VOYAGE_BASE_URL` (with `/v1`), `CO_API_URL`,
`GOOGLE_GEMINI_BASE_URL`, `MIXEDBREAD_BASE_URL` and `OPENAI_BASE_URL` (with `/v1`), read each time settings
are built.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..base.errors import UsageError, choices


@dataclass(frozen=True)
class ProviderSettings:
    provider: str
    tokens_per_minute: int  # 0 = no token budget
    requests_per_minute: int  # 0 = no request budget
    min_interval: float  # seconds between the starts of two calls; 0 = none
    timeout: float  # seconds per HTTP call (converted to ms for Gemini)
    max_attempts: int  # total attempts per call, first one included
    base_url: str | None  # None = the SDK's default endpoint
    max_batch_items: int
    max_batch_tokens: int
    items_per_minute: int = 0  # 0 = no item budget (Cohere limits inputs per minute)
    window: float = 60.0  # length of the budget window in seconds (tests scale it down)
    max_wait: float = 120.0  # cap on a single backoff or Retry-After wait, seconds

    @property
    def key(self) -> tuple:
        """What makes two settings share one throttle."""
        return (
            self.provider,
            self.tokens_per_minute,
            self.requests_per_minute,
            self.items_per_minute,
            self.min_interval,
            self.window,
        )


BASE_URL_ENV = {
    "voyage": "VOYAGE_BASE_URL",
    "cohere": "CO_API_URL",
    "gemini": "GOOGLE_GEMINI_BASE_URL",
    "mixedbread": "MIXEDBREAD_BASE_URL",
    "openai": "OPENAI_BASE_URL",
}

KEY_ENV = {
    "voyage": "VOYAGE_API_KEY",
    "cohere": "COHERE_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "mixedbread": "MXBAI_API_KEY",
    "openai": "OPENAI_API_KEY",
    "rerank-api": "RERANK_API_KEY",  # optional: a /rerank or /score server of your own started with a key
}

# The key of servers of your own: what `vllm serve` reads (as its --api-key), and what serve-embedder and
# serve-reranker hand to their replicas. Each client's variables for a server of your own, the first set wins:
# `openai:` takes VLLM_API_KEY before OPENAI_API_KEY (often OpenAI's own key, which is then never sent to your
# server); `rerank-api:` its own RERANK_API_KEY before VLLM_API_KEY; the local rerankers VLLM_API_KEY.
SERVER_KEY_ENV = "VLLM_API_KEY"
SERVER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": (SERVER_KEY_ENV, KEY_ENV["openai"]),
    "rerank-api": (KEY_ENV["rerank-api"], SERVER_KEY_ENV),
    "vllm": (SERVER_KEY_ENV,),
}

# provider -> (tpm, rpm, ipm, batch items, batch tokens)
DEFAULTS: dict[str, tuple[int, int, int, int, int]] = {
    "voyage": (3_000_000, 2_000, 0, 1_000, 120_000),
    "cohere": (0, 2_000, 2_000, 96, 500_000),
    "gemini": (1_000_000, 3_000, 0, 100, 500_000),
    "mixedbread": (1_000_000, 300, 0, 1_000, 500_000),
    "openai": (500_000, 500, 0, 1, 1_000_000),
}
# `openai:<model>` embeddings on OpenAI itself: tier 1 for text-embedding-3-* (tokens, requests per minute); on a
# server of your own, no budget unless --openai-tpm / --openai-rpm say otherwise.
OPENAI_EMBEDDING_BUDGET = (1_000_000, 3_000)
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_ATTEMPTS = 6


def _number(options: dict[str, Any], key: str, default, kind=int, minimum=0):
    value = options.get(key)
    if value is None:
        return default
    flag = "--" + key.replace("_", "-")  # the run option that sets it: voyage_tpm is --voyage-tpm
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise UsageError(f"{flag} {value!r} is not a number", f"give a number >= {minimum}") from None
    if number < minimum:
        raise UsageError(f"{flag} {value} is below {minimum}", f"give a number >= {minimum}")
    return number


def provider_settings(provider: str, options: dict[str, Any] | None = None) -> ProviderSettings:
    """Settings for `provider`: defaults above, overridden by run options and base-URL variables."""
    if provider not in DEFAULTS:
        raise UsageError(f"unknown provider '{provider}'", f"choose from {choices(sorted(DEFAULTS))}")
    options = {k.replace("-", "_"): v for k, v in (options or {}).items()}
    tpm, rpm, ipm, items, tokens = DEFAULTS[provider]
    base_url = os.environ.get(BASE_URL_ENV[provider], "").strip().rstrip("/") or None
    return ProviderSettings(
        provider=provider,
        tokens_per_minute=_number(options, f"{provider}_tpm", tpm),
        requests_per_minute=_number(options, f"{provider}_rpm", rpm),
        items_per_minute=_number(options, f"{provider}_ipm", ipm),
        min_interval=_number(options, f"{provider}_interval", 0.0, float),
        timeout=_number(options, "timeout", DEFAULT_TIMEOUT, float, minimum=0.001),
        max_attempts=_number(options, "max_attempts", DEFAULT_MAX_ATTEMPTS, int, minimum=1),
        base_url=base_url,
        max_batch_items=items,
        max_batch_tokens=tokens,
    )


def workers_option(options: dict[str, Any] | None, default: int) -> int:
    """`--workers` (concurrent requests): a whole number >= 1; 0 or less is refused, never silently replaced."""
    value = (options or {}).get("workers")
    if value is None:
        return default
    try:
        workers = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"--workers {value!r} is not a whole number", f"use e.g. --workers {default}") from None
    if workers < 1:
        raise UsageError(f"--workers {workers} must be at least 1", f"use e.g. --workers {default}")
    return workers


def check_provider_options(options: dict[str, Any]) -> None:
    """Every provider option given (--timeout, --max-attempts, --<provider>-tpm/-rpm/-interval) checked at once,
    whatever the method: a bad number is refused even when this method calls no provider (bm25, minilm)."""
    for provider in DEFAULTS:
        provider_settings(provider, options)

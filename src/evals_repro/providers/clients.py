"""Official SDK clients, built with their own retries off: `retry.call_with_retries` owns retries.

Each SDK is imported inside its function so that importing the CLI never loads one.
Quirks handled here (see the provider wire-format notes): Voyage's `max_retries` counts attempts, so 1
means a single try; Cohere reads `CO_API_URL` once per process, so the base URL is always passed
explicitly; Gemini's timeout is in milliseconds and its client must stay referenced while in use.
"""

from __future__ import annotations

from typing import Any

from .keys import require_key
from .settings import KEY_ENV, ProviderSettings

COHERE_DEFAULT_BASE_URL = "https://api.cohere.com"
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "EMPTY"  # sent to a server of your own that takes no key (the SDK insists on one); vLLM's docs use it


def openai_self_hosted(base_url: str | None) -> bool:
    """Whether an OpenAI-compatible `base_url` is a server of your own (a vLLM, TEI or Infinity replica) rather
    than OpenAI itself (None: the SDK's default, OpenAI). The one rule for `openai:` work, wherever it is decided:
    its key (`openai_key_required`), its budget and its price: work on a server of your own has no price
    (`prices.SELF_HOSTED`), for the embedder (`openai:<model>`) and the generators and judges of vidore_paper."""
    return bool(base_url) and str(base_url).rstrip("/") != OPENAI_DEFAULT_BASE_URL


def openai_key_required(base_url: str | None) -> bool:
    """OPENAI_API_KEY is needed for OpenAI itself, optional for a server of your own (vLLM, TEI, Infinity)."""
    return not openai_self_hosted(base_url)


def openai_key(base_url: str | None) -> str | None:
    """The key for `base_url`: OPENAI_API_KEY for OpenAI itself (required); for a server of your own (a vLLM,
    TEI or Infinity replica) VLLM_API_KEY, else OPENAI_API_KEY, else none (`keys.server_key`).

    The one place that decides which OpenAI key is needed: the embedder (`openai:<model>`) and the
    generators and judges of vidore_paper read it through here."""
    from .keys import server_key

    if not openai_key_required(base_url):
        return server_key("openai").value
    return require_key(KEY_ENV["openai"])


def openai_client(settings: ProviderSettings, base_url: str | None = None, api_key: str | None = None):
    """The official OpenAI SDK client for one base URL (with `/v1`), its own retries off.

    httpx is imported here, before any worker thread calls: the SDK (on httpx2) checks responses and errors
    against httpx's classes too when httpx is in sys.modules, and a worker that caught it half-imported by
    another thread (the retry classifier imports it on the first failure) failed with an AttributeError."""
    import httpx  # noqa: F401
    import openai

    url = (base_url or settings.base_url or OPENAI_DEFAULT_BASE_URL).rstrip("/")
    key = api_key or openai_key(url) or NO_KEY
    return openai.OpenAI(api_key=key, base_url=url, max_retries=0, timeout=settings.timeout)


def voyage_client(settings: ProviderSettings, api_key: str | None = None):
    import voyageai

    kwargs = {"base_url": settings.base_url} if settings.base_url else {}
    return voyageai.Client(
        api_key=api_key or require_key(KEY_ENV["voyage"]), max_retries=1, timeout=settings.timeout, **kwargs
    )


def cohere_client(settings: ProviderSettings, api_key: str | None = None):
    import cohere

    return cohere.ClientV2(
        api_key=api_key or require_key(KEY_ENV["cohere"]),
        base_url=settings.base_url or COHERE_DEFAULT_BASE_URL,
        timeout=settings.timeout,
        max_retries=0,
    )


def gemini_client(settings: ProviderSettings, api_key: str | None = None):
    from google import genai
    from google.genai import types

    options: dict[str, Any] = {"timeout": max(1, int(round(settings.timeout * 1000)))}
    if settings.base_url:
        options["base_url"] = settings.base_url
    return genai.Client(api_key=api_key or require_key(KEY_ENV["gemini"]), http_options=types.HttpOptions(**options))


def mixedbread_client(settings: ProviderSettings, api_key: str | None = None):
    from mixedbread import Mixedbread

    kwargs: dict[str, Any] = {"base_url": settings.base_url} if settings.base_url else {}
    return Mixedbread(
        api_key=api_key or require_key(KEY_ENV["mixedbread"]), max_retries=0, timeout=settings.timeout, **kwargs
    )

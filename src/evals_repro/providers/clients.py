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

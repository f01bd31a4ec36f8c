"""Turn each SDK's exceptions into one shape: retryable or not, HTTP status, Retry-After, message.

Per SDK (pinned versions; see the provider wire-format notes):
- voyageai: RateLimitError / ServiceUnavailableError / ServerError / Timeout / APIConnectionError / TryAgain
  (`http_status`, `headers`); a 4xx without a JSON `detail` arrives as a plain APIError with the status.
- cohere: typed ApiError subclasses and plain ApiError (`status_code`, `headers` dict with lower-case keys);
  timeouts and dropped connections arrive as raw httpx exceptions.
- google-genai: ClientError / ServerError (`code`, `response.headers`); the sync transport is httpx2, so its
  timeouts are httpx2 exceptions, not httpx ones.
- mixedbread: RateLimitError / InternalServerError / APIStatusError (`status_code`, `response.headers`),
  APITimeoutError / APIConnectionError.
- openai (any OpenAI-compatible server, called with httpx): httpx.HTTPStatusError (`response.status_code`,
  `response.headers`, body `{"error": {"message": ...}}`), httpx timeouts and transport errors.
"""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass

RETRYABLE_STATUS = {408, 429}


@dataclass(frozen=True)
class Failure:
    retryable: bool
    status: int | None  # HTTP status, None for timeouts and dropped connections
    retry_after: float | None  # seconds the provider asked us to wait, if it said
    message: str


def parse_retry_after(value, now: float | None = None) -> float | None:
    """Seconds from a Retry-After value: a number of seconds or an HTTP-date; None when unusable."""
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def _header(headers, name: str):
    if headers is None:
        return None
    try:
        value = headers.get(name)
        if value is None:
            value = headers.get(name.title())
        return value
    except AttributeError:
        return None


def retry_after_from(headers) -> float | None:
    milliseconds = _header(headers, "retry-after-ms")
    if milliseconds is not None:
        seconds = parse_retry_after(milliseconds)
        if seconds is not None:
            return seconds / 1000.0
    return parse_retry_after(_header(headers, "retry-after"))


def _text(body) -> str:
    if isinstance(body, dict):
        for key in ("message", "detail", "error"):
            if key in body:
                return _text(body[key])
    return str(body)


def _one_line(text: str, limit: int = 300) -> str:
    from .keys import redact

    text = " ".join(redact(str(text)).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _status_failure(status: int | None, headers, message: str) -> Failure:
    retryable = status is not None and (status in RETRYABLE_STATUS or status >= 500)
    return Failure(retryable, status, retry_after_from(headers), _one_line(message))


def _transport(exc: BaseException) -> Failure | None:
    """Timeouts and dropped connections from any HTTP stack the SDKs use."""
    import httpx

    stacks: list[type] = [httpx.TimeoutException, httpx.TransportError, TimeoutError, ConnectionError]
    try:
        import httpx2

        stacks += [httpx2.TimeoutException, httpx2.TransportError]
    except ImportError:
        pass
    try:
        import requests

        stacks += [requests.Timeout, requests.ConnectionError]
    except ImportError:
        pass
    if isinstance(exc, tuple(stacks)):
        kind = (
            "timed out"
            if "timeout" in type(exc).__name__.lower() or isinstance(exc, TimeoutError)
            else "connection failed"
        )
        return Failure(True, None, None, _one_line(f"{kind} ({type(exc).__name__}: {exc})"))
    return None


def classify_voyage(exc: BaseException) -> Failure | None:
    from voyageai import error

    if isinstance(exc, (error.Timeout, error.APIConnectionError, error.TryAgain)):
        return Failure(True, None, None, _one_line(f"{type(exc).__name__}: {exc}"))
    if isinstance(exc, error.VoyageError):
        status = exc.http_status
        if isinstance(exc, (error.RateLimitError,)):
            status = status or 429
        if isinstance(exc, (error.ServiceUnavailableError, error.ServerError)):
            status = status or 500
        message = _text(exc.json_body) if exc.json_body else (exc.user_message or str(exc))
        return _status_failure(status, exc.headers, message)
    return _transport(exc)


def classify_cohere(exc: BaseException) -> Failure | None:
    from cohere.core import ApiError

    if isinstance(exc, ApiError):
        return _status_failure(exc.status_code, exc.headers, _text(exc.body))
    return _transport(exc)


def classify_gemini(exc: BaseException) -> Failure | None:
    from google.genai import errors

    if isinstance(exc, errors.APIError):
        headers = getattr(getattr(exc, "response", None), "headers", None)
        return _status_failure(exc.code, headers, exc.message or exc.status or str(exc))
    return _transport(exc)


def classify_mixedbread(exc: BaseException) -> Failure | None:
    import mixedbread

    if isinstance(exc, mixedbread.APIStatusError):
        return _status_failure(exc.status_code, exc.response.headers, _text(exc.body) if exc.body else exc.message)
    if isinstance(exc, (mixedbread.APITimeoutError, mixedbread.APIConnectionError)):
        return Failure(True, None, None, _one_line(f"{type(exc).__name__}: {exc}"))
    return _transport(exc)


def classify_openai(exc: BaseException) -> Failure | None:
    import httpx

    if isinstance(exc, httpx.HTTPStatusError):
        response = exc.response
        try:
            body = response.json()
        except ValueError:
            body = response.text
        return _status_failure(response.status_code, response.headers, _text(body) or response.reason_phrase)
    return _transport(exc)


CLASSIFIERS = {
    "voyage": classify_voyage,
    "cohere": classify_cohere,
    "gemini": classify_gemini,
    "mixedbread": classify_mixedbread,
    "openai": classify_openai,
}


def classify(provider: str, exc: BaseException) -> Failure | None:
    """A Failure for an error from `provider`'s SDK or transport; None for anything else."""
    return CLASSIFIERS[provider](exc)

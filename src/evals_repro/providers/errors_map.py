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
- openai (any OpenAI-compatible server): the official SDK's APIStatusError / APITimeoutError /
  APIConnectionError for embeddings, model lists and chat completions. Providers with no classifier of their
  own (the local vLLM rerankers, spoken to with httpx) share its classifier: httpx.HTTPStatusError
  (`response.status_code`, `response.headers`, body `{"error": {"message": ...}}`), httpx timeouts and
  transport errors.

A 200 whose body cannot be read (truncated or not JSON: voyageai and cohere wrap it in their APIError
with a 2xx status, google-genai and mixedbread let `json.JSONDecodeError` through, pydantic rejects a
body that is JSON of the wrong shape) is `malformed`: retried like a 5xx, and its message carries at
most `EXCERPT` characters of the body. `MalformedAnswer` lets callers flag an answer that parsed but
does not fit the request (wrong count, NaN) the same way.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

RETRYABLE_STATUS = {408, 429}
EXCERPT = 80  # characters of an unreadable body shown in an error message

# What went wrong, which decides the advice when retries run out.
RATE_LIMITED, SERVER, TIMEOUT, CONNECTION, MALFORMED, REJECTED, UNSENDABLE = (
    "rate_limited",
    "server",
    "timeout",
    "connection",
    "malformed",
    "rejected",
    "unsendable",  # the HTTP stack refused to build the request (e.g. a key with a newline in it)
)


class MalformedAnswer(Exception):
    """An answer that parsed but does not fit the request; retried like a 5xx."""


@dataclass(frozen=True)
class Failure:
    retryable: bool
    status: int | None  # HTTP status, None for timeouts and dropped connections
    retry_after: float | None  # seconds the provider asked us to wait, if it said
    message: str
    kind: str = SERVER


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
        import email.utils  # an HTTP-date (rare): its parser is not imported for every component lookup

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


def excerpt(body) -> str:
    """At most EXCERPT characters of a body, on one line, keys redacted."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    text = "" if body is None else str(body)
    shown = _one_line(text, EXCERPT)
    return f"{shown!r} ({len(text)} characters)" if text else "an empty body"


def malformed(status: int | None, body, detail: str = "") -> Failure:
    what = f"{detail}: {excerpt(body)}" if detail else excerpt(body)
    return Failure(True, status, None, what, MALFORMED)


def _status_failure(status: int | None, headers, message: str) -> Failure:
    if status == 429:
        kind = RATE_LIMITED
    elif status is not None and (status in RETRYABLE_STATUS or status >= 500):
        kind = SERVER
    else:
        kind = REJECTED
    return Failure(kind != REJECTED, status, retry_after_from(headers), _one_line(message), kind)


def _unreadable(exc: BaseException) -> Failure | None:
    """A body that is not JSON, or JSON of a shape the SDK cannot read, or an answer flagged by the caller."""
    import json

    if isinstance(exc, MalformedAnswer):
        return Failure(True, None, None, _one_line(f"the answer does not fit the request: {exc}"), MALFORMED)
    if isinstance(exc, json.JSONDecodeError):
        return malformed(None, exc.doc, exc.msg)
    try:
        import pydantic

        if isinstance(exc, pydantic.ValidationError):
            return malformed(None, "", f"{exc.error_count()} field(s) missing or of the wrong type")
    except ImportError:  # pragma: no cover - every SDK here depends on pydantic
        pass
    return None


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
        timeout = "timeout" in type(exc).__name__.lower() or isinstance(exc, TimeoutError)
        what = "timed out" if timeout else "connection failed"
        return Failure(
            True, None, None, _one_line(f"{what} ({type(exc).__name__}: {exc})"), TIMEOUT if timeout else CONNECTION
        )
    return _unreadable(exc)


def _unsendable(exc: BaseException) -> Failure | None:
    """An exception (anywhere in the chain) that says the request could not even be built: retrying is useless.

    h11's own LocalProtocolError (an illegal header value) always reaches us wrapped by the httpx or httpx2 one
    of the same name, so the stacks the SDKs call are enough."""
    import httpx

    kinds: list[type] = [httpx.LocalProtocolError, httpx.UnsupportedProtocol]
    try:
        import requests

        kinds += [requests.exceptions.InvalidHeader, requests.exceptions.InvalidURL, requests.exceptions.MissingSchema]
    except ImportError:
        pass
    try:
        import httpx2

        kinds += [httpx2.LocalProtocolError, httpx2.UnsupportedProtocol]
    except ImportError:
        pass
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, tuple(kinds)) or isinstance(current, UnicodeEncodeError):
            return Failure(
                False,
                None,
                None,
                _one_line(f"could not send the request ({type(current).__name__}: {current})"),
                UNSENDABLE,
            )
        current = current.__cause__ or current.__context__
    return None


def classify_voyage(exc: BaseException) -> Failure | None:
    from voyageai import error

    if isinstance(exc, error.Timeout):
        return Failure(True, None, None, _one_line(f"timed out ({type(exc).__name__}: {exc})"), TIMEOUT)
    if isinstance(exc, (error.APIConnectionError, error.TryAgain)):
        return Failure(True, None, None, _one_line(f"{type(exc).__name__}: {exc}"), CONNECTION)
    if isinstance(exc, error.VoyageError):
        status = exc.http_status
        if status is not None and 200 <= status < 300:  # "Invalid response body": a 200 it cannot parse
            return malformed(status, exc.http_body)
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
        if exc.status_code is not None and 200 <= exc.status_code < 300:  # a 200 body it could not parse
            return malformed(exc.status_code, exc.body)
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
    if isinstance(exc, mixedbread.APITimeoutError):
        return Failure(True, None, None, _one_line(f"timed out ({type(exc).__name__}: {exc})"), TIMEOUT)
    if isinstance(exc, mixedbread.APIConnectionError):
        return Failure(True, None, None, _one_line(f"{type(exc).__name__}: {exc}"), CONNECTION)
    return _transport(exc)


def _classify_openai_sdk(exc: BaseException) -> Failure | None:
    """The official openai SDK's errors (the `openai:<model>` embedder); None when it is not one of them."""
    try:
        import openai
    except ImportError:  # pragma: no cover - a dependency of the package
        return None
    if isinstance(exc, openai.APIStatusError):
        return _status_failure(exc.status_code, exc.response.headers, _text(exc.body) if exc.body else exc.message)
    if isinstance(exc, openai.APITimeoutError):
        return Failure(True, None, None, _one_line(f"timed out ({type(exc).__name__}: {exc})"), TIMEOUT)
    if isinstance(exc, openai.APIConnectionError):
        return Failure(True, None, None, _one_line(f"{type(exc).__name__}: {exc}"), CONNECTION)
    if isinstance(exc, openai.APIResponseValidationError):
        return malformed(exc.status_code, exc.body, "the answer does not follow the schema")
    return None


def classify_openai(exc: BaseException) -> Failure | None:
    import httpx

    sdk = _classify_openai_sdk(exc) if type(exc).__module__.startswith("openai") else None
    if sdk is not None:
        return sdk
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


_IMPORT_LOCK = threading.Lock()
_imported = False


def _import_http_stacks() -> None:
    """Import the HTTP stacks the classifiers test against once, under a lock. Worker threads classify their
    first failures at the same moment; when an SDK does not use one of them (openai uses httpx2, not httpx),
    several threads would import it concurrently, in different orders with its dependencies, and Python's
    import-deadlock breaker then hands one thread a partially initialised module."""
    global _imported
    if _imported:
        return
    with _IMPORT_LOCK:
        if not _imported:
            import httpx  # noqa: F401

            try:  # the stacks some SDKs use; an absent one is not checked
                import httpx2  # noqa: F401
            except ImportError:
                pass
            try:
                import requests  # noqa: F401
            except ImportError:
                pass
            _imported = True


def classify(provider: str, exc: BaseException) -> Failure | None:
    """A Failure for an error from `provider`'s SDK or transport; None for anything else.

    Providers without an SDK of their own (local vLLM replicas spoken to with httpx) get the httpx one.
    """
    _import_http_stacks()
    return _unsendable(exc) or CLASSIFIERS.get(provider, classify_openai)(exc)

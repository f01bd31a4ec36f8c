"""One place that calls a provider: throttle, call, classify the failure, wait, retry, count.

429, 5xx, 408, timeouts, dropped connections and 200s with an unreadable body are retried, waiting
`Retry-After` (seconds or HTTP-date) when the provider sent one, else exponential backoff with jitter;
both capped at `settings.max_wait`. Any other 4xx fails at once with the provider's message. When
attempts run out, the advice follows the last failure (a timeout: raise --timeout; 429s: lower the
per-minute budget; ...). Every exception caught here has its chain scrubbed of keys (`keys.scrub_exception`)
before anything can print it. Usage keys (per provider `p`): `p_requests`
(logical calls), `p_attempts`, `p_retries`, `p_rate_limited` (429 answers), `p_tokens`,
`p_wait_seconds` (throttle waits and backoff), `p_call_seconds` (time inside successful calls).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from ..base.errors import EvalsError, ProviderError
from ..base.usage import Usage
from . import calibration, errors_map
from .ceiling import current_guard
from .errors_map import Failure, classify
from .keys import redact, scrub_exception
from .settings import BASE_URL_ENV, KEY_ENV, ProviderSettings
from .throttle import Throttle, get_throttle

T = TypeVar("T")

BACKOFF_BASE = 1.0  # seconds before the first retry when the provider gives no Retry-After
BACKOFF_CAP = 30.0


def backoff_delay(retry_number: int, rng: random.Random | None = None, cap: float = BACKOFF_CAP) -> float:
    """Exponential backoff with jitter: 1, 2, 4, ... seconds (capped), each scaled by 0.5-1.0."""
    ceiling = min(cap, BACKOFF_BASE * 2 ** (retry_number - 1))
    return ceiling * (0.5 + 0.5 * (rng or random).random())


def _rejected(settings: ProviderSettings, what: str, failure: Failure) -> ProviderError:
    status = f"HTTP {failure.status}" if failure.status is not None else "not sent"
    key_env = KEY_ENV.get(settings.provider)  # None for local servers (vLLM replicas): no key to check
    if failure.status in (401, 403) and key_env:
        hint = f"check {key_env} (the provider refused the key)"
    elif failure.kind == errors_map.UNSENDABLE and key_env:
        hint = (
            f"check {key_env} for stray characters (a newline, quotes, non-ASCII) and "
            f"{BASE_URL_ENV.get(settings.provider, 'the server URL')}"
        )
    else:
        hint = "the provider rejected the request; it is not retried"
    return ProviderError(f"{settings.provider} {what} rejected ({status}): {failure.message}", hint)


def exhausted_hint(settings: ProviderSettings, failure: Failure) -> str:
    """What to do when every attempt failed, from the kind of the last failure."""
    p = settings.provider
    if p not in BASE_URL_ENV:  # a local server (vLLM replica), reached at URLs of its own
        if failure.kind == errors_map.TIMEOUT:
            return f"no answer within --timeout {settings.timeout:g}s: raise --timeout, or check the server's load"
        return "check that the server is up and healthy, or raise --max-attempts"
    if failure.kind == errors_map.TIMEOUT:
        return (
            f"no answer within --timeout {settings.timeout:g}s: raise --timeout "
            f"(large batches and slow networks need more), or retry later"
        )
    if failure.kind == errors_map.RATE_LIMITED:
        return f"the provider's budget is smaller than ours: lower --{p}-tpm/--{p}-rpm, or retry later"
    if failure.kind == errors_map.MALFORMED:
        return (
            f"the provider or a proxy keeps answering bodies that cannot be read: check {BASE_URL_ENV[p]} "
            "and the network, then retry"
        )
    if failure.kind == errors_map.CONNECTION:
        return f"cannot reach the provider: check the network and {BASE_URL_ENV[p]}, then retry"
    return "the provider keeps failing: retry later, or raise --max-attempts"


def _exhausted(settings: ProviderSettings, what: str, failure: Failure, attempts: int) -> ProviderError:
    status = f"HTTP {failure.status}" if failure.status is not None else "no answer"
    if failure.kind == errors_map.MALFORMED and failure.status is not None:
        status = f"HTTP {failure.status} with an unreadable body"
    elif failure.kind == errors_map.MALFORMED:
        status = "an unreadable answer"
    return ProviderError(
        f"{settings.provider} {what} failed after {attempts} attempts (last: {status}: {failure.message})",
        exhausted_hint(settings, failure),
    )


def call_with_retries(
    settings: ProviderSettings,
    fn: Callable[[], T],
    *,
    usage: Usage,
    tokens: int = 0,
    items: int = 1,
    what: str = "embed",
    reported_tokens: Callable[[T], int | None] | None = None,
    model: str | None = None,
    bill: Callable[[T], dict[str, float]] | None = None,
    estimate: dict[str, float] | None = None,
    throttle: Throttle | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> T:
    """Call `fn` under the provider's throttle until it succeeds, fails for good, or attempts run out.

    `tokens`/`items` are the estimated cost the throttle books; `reported_tokens(result)` returns the
    provider's own count when it gives one, which then replaces the estimate.

    A paid call names its `model`: what it bills (`bill(result)`, by default its input tokens, reported
    or estimated) is counted in `usage.billed()` for pricing, and `--max-cost` (the process's
    `ceiling.CostGuard`) is consulted first with `estimate` (default: the estimated input tokens).
    """
    p = settings.provider
    throttle = throttle or get_throttle(settings)
    guard = current_guard() if model is not None else None
    planned: dict[str, float] = estimate if estimate is not None else {"input_tokens": tokens}
    reservation = guard.admit(p, model, planned) if guard is not None and model is not None else 0.0
    try:
        result = _attempts(settings, fn, usage, tokens, items, what, reported_tokens, throttle, sleep, rng)
    except BaseException:
        if guard is not None and model is not None:
            guard.settle(reservation, p, model, None)
        raise
    if model is not None:
        counted = reported_tokens(result) if reported_tokens is not None else None
        billed: dict[str, float] = (
            bill(result) if bill is not None else {"input_tokens": counted if counted is not None else tokens}
        )
        usage.bill(p, model, billed)
        if counted is not None and planned.get("input_tokens") and billed.get("input_tokens"):
            # input tokens only: an output estimate is a cap, not a guess at the tokenizer
            calibration.record(p, model, planned["input_tokens"], billed["input_tokens"])
        if guard is not None:
            guard.settle(reservation, p, model, billed)
    return result


def _attempts(
    settings: ProviderSettings,
    fn: Callable[[], T],
    usage: Usage,
    tokens: int,
    items: int,
    what: str,
    reported_tokens: Callable[[T], int | None] | None,
    throttle: Throttle,
    sleep: Callable[[float], None],
    rng: random.Random | None,
) -> T:
    p = settings.provider
    usage.add(f"{p}_requests")
    for attempt in range(1, settings.max_attempts + 1):
        ticket, waited = throttle.acquire(tokens, items)
        if waited:
            usage.add(f"{p}_wait_seconds", waited)
        usage.add(f"{p}_attempts")
        started = time.perf_counter_ns()
        try:
            result = fn()
        except EvalsError:  # already one clear line (a provider refusal, an input that cannot fit)
            throttle.release(ticket, 0)
            raise
        except Exception as exc:
            scrub_exception(exc)  # a key in a message, a body or a request object never reaches a traceback
            failure = classify(p, exc)
            # An unreadable 200 was processed (and counted) by the provider: keep its estimate booked.
            throttle.release(ticket, None if failure is not None and failure.kind == errors_map.MALFORMED else 0)
            if failure is None:
                detail = " ".join(redact(str(exc)).split())[: errors_map.EXCERPT]
                raise ProviderError(
                    f"{p} {what}: unexpected answer ({type(exc).__name__}: {detail})",
                    f"the provider or a proxy answered something the SDK cannot read; check {BASE_URL_ENV[p]}",
                ) from exc
            if not failure.retryable:
                raise _rejected(settings, what, failure) from exc
            if failure.status == 429:
                usage.add(f"{p}_rate_limited")
            if attempt == settings.max_attempts:
                raise _exhausted(settings, what, failure, attempt) from exc
            delay = failure.retry_after if failure.retry_after is not None else backoff_delay(attempt, rng)
            delay = min(delay, settings.max_wait)
            if failure.status == 429:
                throttle.pause(delay)  # the budget is shared: hold the other threads too
            usage.add(f"{p}_retries")
            usage.add(f"{p}_wait_seconds", delay)
            sleep(delay)
            continue
        # Time inside the successful SDK call alone (no throttle wait, failed attempt or backoff):
        # the latency study reads it off a per-worker Usage.
        usage.add(f"{p}_call_seconds", (time.perf_counter_ns() - started) / 1e9)
        counted = reported_tokens(result) if reported_tokens is not None else None
        throttle.release(ticket, counted)
        usage.add(f"{p}_tokens", counted if counted is not None else tokens)
        return result
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

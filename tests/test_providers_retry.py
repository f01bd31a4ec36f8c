"""call_with_retries against each SDK's real exception classes, with a fake sleep."""

from __future__ import annotations

import email.utils
import random
import time

import httpx
import httpx2
import pytest

from evals_repro.base.errors import ProviderError
from evals_repro.base.usage import Usage
from evals_repro.providers.errors_map import classify, parse_retry_after
from evals_repro.providers.retry import backoff_delay, call_with_retries
from evals_repro.providers.settings import provider_settings
from evals_repro.providers.throttle import Throttle
from fakes.clock import FakeClock

REQUEST = httpx.Request("POST", "http://127.0.0.1:1/x")


def voyage_429(after="3"):
    from voyageai import error

    return error.RateLimitError(
        "slow down", http_status=429, json_body={"detail": "slow down"}, headers={"retry-after": after}
    )


def cohere_429(after="3"):
    import cohere

    return cohere.TooManyRequestsError(body={"message": "slow down"}, headers={"retry-after": after})


def gemini_429(after="3"):
    from google.genai import errors

    response = httpx2.Response(429, headers={"Retry-After": after})
    return errors.ClientError(
        429, {"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}, response
    )


def mixedbread_429(after="3"):
    import mixedbread

    response = httpx.Response(429, headers={"Retry-After": after}, request=REQUEST)
    return mixedbread.RateLimitError("Error code: 429", response=response, body={"message": "slow down"})


RATE_LIMITS = {"voyage": voyage_429, "cohere": cohere_429, "gemini": gemini_429, "mixedbread": mixedbread_429}


def transient_errors():
    """(provider, exception) pairs that must be retried: 5xx, timeouts, dropped connections."""
    import cohere
    import mixedbread
    from google.genai import errors as gerrors
    from voyageai import error as verror

    return [
        ("voyage", verror.ServiceUnavailableError("busy", http_status=503)),
        ("voyage", verror.ServerError("boom", http_status=500)),
        ("voyage", verror.Timeout("Request timed out")),
        ("voyage", verror.APIConnectionError("connection reset")),
        ("cohere", cohere.InternalServerError(body={"message": "boom"})),
        ("cohere", cohere.ServiceUnavailableError(body={"message": "busy"})),
        ("cohere", cohere.GatewayTimeoutError(body={"message": "gw"})),
        ("cohere", __import__("cohere").core.ApiError(status_code=502, body="bad gateway", headers={})),
        ("cohere", httpx.ReadTimeout("read timed out", request=REQUEST)),
        ("cohere", httpx.ConnectError("refused", request=REQUEST)),
        (
            "gemini",
            gerrors.ServerError(
                503, {"error": {"code": 503, "message": "busy", "status": "UNAVAILABLE"}}, httpx2.Response(503)
            ),
        ),
        ("gemini", httpx2.ReadTimeout("timed out")),
        ("gemini", httpx2.ConnectError("refused")),
        (
            "mixedbread",
            mixedbread.InternalServerError("Error code: 500", response=httpx.Response(500, request=REQUEST), body=None),
        ),
        ("mixedbread", mixedbread.APITimeoutError(request=REQUEST)),
        ("mixedbread", mixedbread.APIConnectionError(request=REQUEST)),
    ]


class Script:
    """A callable that raises the scripted exceptions in turn, then returns 'ok'."""

    def __init__(self, *failures):
        self.failures = list(failures)
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


def run(provider, fn, *, attempts=4, **kwargs):
    """Throttle and retry loop share one fake clock, so no test sleeps for real."""
    settings = provider_settings(provider, {"max_attempts": attempts})
    usage = Usage()
    clock = FakeClock()
    throttle = Throttle(clock=clock, sleep=clock.sleep)
    result = call_with_retries(
        settings, fn, usage=usage, throttle=throttle, sleep=clock.sleep, rng=random.Random(0), **kwargs
    )
    return result, usage, clock.sleeps


@pytest.mark.parametrize("provider", sorted(RATE_LIMITS))
def test_429_waits_retry_after_seconds(provider):
    fn = Script(RATE_LIMITS[provider]("3"))
    result, usage, sleeps = run(provider, fn, tokens=7)
    assert result == "ok" and fn.calls == 2
    assert sleeps == [3.0]
    counts = usage.as_dict()
    assert counts[f"{provider}_attempts"] == 2
    assert counts[f"{provider}_retries"] == 1
    assert counts[f"{provider}_rate_limited"] == 1
    assert counts[f"{provider}_requests"] == 1
    assert counts[f"{provider}_tokens"] == 7
    assert counts[f"{provider}_wait_seconds"] == 3.0


@pytest.mark.parametrize("provider", sorted(RATE_LIMITS))
def test_429_retry_after_http_date(provider):
    when = email.utils.formatdate(time.time() + 20, usegmt=True)
    fn = Script(RATE_LIMITS[provider](when))
    _, _, sleeps = run(provider, fn)
    assert 17 <= sleeps[0] <= 20


@pytest.mark.parametrize(
    "provider,exc", transient_errors(), ids=lambda v: type(v).__name__ if not isinstance(v, str) else v
)
def test_transient_errors_are_retried_with_backoff(provider, exc):
    fn = Script(exc)
    result, usage, sleeps = run(provider, fn)
    assert result == "ok" and fn.calls == 2
    assert len(sleeps) == 1 and 0.5 <= sleeps[0] <= 1.0  # first backoff: 1 s scaled by 0.5-1.0
    assert usage.get(f"{provider}_rate_limited") == 0


def client_errors():
    import cohere
    import mixedbread
    from google.genai import errors as gerrors
    from voyageai import error as verror

    return [
        (
            "voyage",
            verror.InvalidRequestError("input too long", http_status=400, json_body={"detail": "input too long"}),
        ),
        ("cohere", cohere.BadRequestError(body={"message": "input too long"})),
        (
            "gemini",
            gerrors.ClientError(
                400,
                {"error": {"code": 400, "message": "input too long", "status": "INVALID_ARGUMENT"}},
                httpx2.Response(400),
            ),
        ),
        (
            "mixedbread",
            mixedbread.BadRequestError(
                "Error code: 400", response=httpx.Response(400, request=REQUEST), body={"message": "input too long"}
            ),
        ),
    ]


@pytest.mark.parametrize("provider,exc", client_errors(), ids=lambda v: v if isinstance(v, str) else "400")
def test_other_4xx_fail_at_once_with_provider_message(provider, exc):
    fn = Script(exc)
    with pytest.raises(ProviderError) as info:
        run(provider, fn)
    assert fn.calls == 1
    line = info.value.one_line()
    assert provider in line and "HTTP 400" in line and "input too long" in line


def test_401_hint_names_key_variable():
    import cohere

    with pytest.raises(ProviderError) as info:
        run("cohere", Script(cohere.UnauthorizedError(body={"message": "invalid api token"})))
    assert "COHERE_API_KEY" in info.value.one_line()


def test_exhausted_names_provider_status_attempts():
    fn = Script(*[voyage_429("1") for _ in range(5)])
    with pytest.raises(ProviderError) as info:
        run("voyage", fn, attempts=3)
    line = info.value.one_line()
    assert fn.calls == 3
    assert "voyage" in line and "HTTP 429" in line and "3 attempts" in line


def test_unexpected_exception_is_a_provider_error_at_once():
    fn = Script(KeyError("data"))
    with pytest.raises(ProviderError, match="unexpected answer"):
        run("voyage", fn)
    assert fn.calls == 1


def test_retry_after_is_capped():
    fn = Script(voyage_429("100000"))
    _, _, sleeps = run("voyage", fn)
    assert sleeps == [provider_settings("voyage").max_wait]


def test_reported_tokens_replace_the_estimate():
    _, usage, _ = run("voyage", Script(), tokens=50, reported_tokens=lambda result: 42)
    assert usage.get("voyage_tokens") == 42


def test_key_is_redacted_from_errors(monkeypatch):
    import cohere

    monkeypatch.setenv("CO_API_KEY", "co-secret-key-1")
    with pytest.raises(ProviderError) as info:
        run("cohere", Script(cohere.BadRequestError(body={"message": "bad key co-secret-key-1"})))
    assert "co-secret-key-1" not in info.value.one_line()


def test_backoff_grows_and_is_capped():
    rng = random.Random(1)
    delays = [backoff_delay(n, rng) for n in range(1, 10)]
    for n, delay in enumerate(delays, start=1):
        ceiling = min(30.0, 2 ** (n - 1))
        assert ceiling / 2 <= delay <= ceiling


def test_parse_retry_after():
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("1.5") == 1.5
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0


def test_unrelated_exception_is_not_classified():
    assert classify("gemini", ValueError("x")) is None

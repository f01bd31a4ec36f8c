"""Throttle budgets with a fake clock: tokens, requests, oversize calls, re-stamping, interval, pause."""

from __future__ import annotations

import threading
import time

import pytest

from evals_repro.providers.settings import provider_settings
from evals_repro.providers.throttle import Throttle, get_throttle
from fakes.clock import FakeClock


def make(clock: FakeClock, **kwargs) -> Throttle:
    return Throttle(clock=clock, sleep=clock.sleep, **kwargs)


def test_token_budget_waits_for_the_window():
    clock = FakeClock()
    throttle = make(clock, tokens_per_window=100, window=60)
    ticket, waited = throttle.acquire(60)
    assert waited == 0
    throttle.release(ticket)
    _, waited = throttle.acquire(60)
    assert waited == 60 and clock.now == 60


def test_request_budget():
    clock = FakeClock()
    throttle = make(clock, requests_per_window=2, window=10)
    for _ in range(2):
        throttle.release(throttle.acquire()[0])
    clock.now = 4
    _, waited = throttle.acquire()
    assert waited == 6


def test_item_budget():
    clock = FakeClock()
    throttle = make(clock, items_per_window=10, window=60)
    throttle.release(throttle.acquire(items=8)[0])
    _, waited = throttle.acquire(items=3)
    assert waited == 60


def test_oversize_call_goes_alone():
    clock = FakeClock()
    throttle = make(clock, tokens_per_window=100, window=60)
    throttle.release(throttle.acquire(10)[0])
    clock.now = 30
    ticket, waited = throttle.acquire(500)  # waits until the window is empty, then goes
    assert waited == 30
    throttle.release(ticket)
    _, waited = throttle.acquire(1)
    assert waited == 60


def test_release_restamps_with_finish_time_and_reported_tokens():
    clock = FakeClock()
    throttle = make(clock, tokens_per_window=100, window=60)
    ticket, _ = throttle.acquire(90)
    clock.now = 5
    throttle.release(ticket, tokens=95)
    _, waited = throttle.acquire(10)
    assert waited == 60  # expires 60 s after the call finished (t=5), not after it started
    clock2 = FakeClock()
    throttle2 = make(clock2, tokens_per_window=100, window=60)
    ticket, _ = throttle2.acquire(90)
    throttle2.release(ticket, tokens=10)  # provider counted fewer tokens: budget is freed
    assert throttle2.acquire(50)[1] == 0


def test_min_interval_and_pause():
    clock = FakeClock()
    throttle = make(clock, min_interval=0.5)
    throttle.release(throttle.acquire()[0])
    assert throttle.acquire()[1] == 0.5
    throttle.pause(3)
    assert throttle.acquire()[1] == 3


def test_no_budget_never_waits():
    clock = FakeClock()
    throttle = make(clock)
    for _ in range(100):
        assert throttle.acquire(10_000)[1] == 0


def test_threads_share_the_budget():
    """Real clock: 6 threads, 5 requests per 0.3 s window; no window ever sees more than 5 starts."""
    throttle = Throttle(requests_per_window=5, window=0.3)
    starts: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(3):
            ticket, _ = throttle.acquire()
            with lock:
                starts.append(time.monotonic())
            throttle.release(ticket)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    starts.sort()
    assert len(starts) == 18
    for i in range(len(starts) - 5):
        assert starts[i + 5] - starts[i] >= 0.3 - 1e-3


def test_get_throttle_is_shared_per_provider_and_budget():
    a = get_throttle(provider_settings("voyage", {"voyage_tpm": 123}))
    b = get_throttle(provider_settings("voyage", {"voyage_tpm": 123, "timeout": 9}))
    c = get_throttle(provider_settings("voyage", {"voyage_tpm": 124}))
    d = get_throttle(provider_settings("cohere", {}))
    assert a is b and a is not c and a is not d


def test_learns_reported_to_estimated_ratio():
    clock = FakeClock()
    throttle = make(clock, tokens_per_window=1000, window=60)
    for _ in range(30):
        ticket, _ = throttle.acquire(100)
        throttle.release(ticket, tokens=50)  # the provider always counts half the estimate
        clock.now += 60
    assert abs(throttle.scale - 0.5) < 0.01
    ticket, _ = throttle.acquire(100)
    assert ticket.tokens in (50, 51)  # ceil of 100 x ~0.5
    ticket, _ = throttle.acquire(100)
    throttle.release(ticket, tokens=0)  # failed calls (booked as zero) teach nothing
    assert abs(throttle.scale - 0.5) < 0.01


def test_reset_throttles_forgets_budgets():
    from evals_repro.providers.throttle import reset_throttles

    settings = provider_settings("gemini", {"gemini_rpm": 7})
    before = get_throttle(settings)
    reset_throttles()
    assert get_throttle(settings) is not before


def test_the_first_reported_count_is_taken_at_once_and_learning_goes_on():
    """Issue 24.3's case per request: estimated 16,000, counted 12,000 by the server, a 36,000 budget."""
    clock = FakeClock()
    throttle = make(clock, tokens_per_window=36_000, window=60)
    first, _ = throttle.acquire(16_000)
    second, _ = throttle.acquire(16_000)
    assert (first.tokens, second.tokens) == (16_000, 16_000)  # nothing learned yet: the estimate
    throttle.release(first, tokens=12_000)
    assert throttle.scale == 0.75  # 12,000 / 16,000 at once, not a step of a moving average
    assert second.tokens == 12_000  # the call in flight is re-booked at the learned ratio
    third, waited = throttle.acquire(16_000)
    assert (third.tokens, waited) == (12_000, 0)  # three requests fit the window, as on the server
    throttle.release(second, tokens=12_000)
    throttle.release(third, tokens=6_000)  # a later report still moves the ratio (0.8 x 0.75 + 0.2 x 0.375)
    assert throttle.scale == pytest.approx(0.675)


def test_a_waiting_thread_is_woken_when_budget_frees():
    """Real clock: the waiter's computed wait is the whole 5 s window, but a call that fails (booked as 0)
    frees its share at once, and the waiter goes then."""
    throttle = Throttle(tokens_per_window=100, window=5.0)
    done, _ = throttle.acquire(50)
    throttle.release(done, tokens=50)
    in_flight, _ = throttle.acquire(50)
    admitted: list[float] = []

    def waiter() -> None:
        throttle.acquire(50)
        admitted.append(time.monotonic())

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.2)
    assert not admitted  # 100 booked: it waits
    freed = time.monotonic()
    throttle.release(in_flight, tokens=0)
    thread.join(timeout=3)
    assert admitted and admitted[0] - freed < 1.0

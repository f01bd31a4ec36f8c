"""Per-provider budgets shared by every thread: tokens, requests and items per window, plus a minimum interval.

A sliding window of recent calls. A call is admitted when the window's sums plus the call stay within
every budget; a call larger than a whole budget is admitted alone once the window is empty. When the
call finishes, `release` re-stamps it with the finish time and the provider's own token count: the
server saw the call at some instant before that, so expiring it from the finish time never lets the
client believe budget is free before the server does.

Character-based estimates can be far off a provider's tokenizer, and an over-estimate wastes budget on
calls in flight. The throttle therefore learns the ratio of reported to estimated tokens and books new
calls at estimate x ratio: the first reported count sets the ratio at once (a short run of a few requests
would otherwise spend most of it on the wrong ratio), later ones move it by a moving average (clamped to
0.2-5), and calls still in flight are re-booked at the new ratio. A thread waiting for budget is woken
when a call finishes, so budget a finished call frees is used at once.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .settings import ProviderSettings

SCALE_ALPHA = 0.2
SCALE_MIN, SCALE_MAX = 0.2, 5.0


@dataclass
class Ticket:
    """One admitted call, held in the window until it expires."""

    stamp: float
    tokens: int  # booked tokens (the estimate scaled by the learned ratio, then the reported count)
    items: int
    estimate: int = 0  # the caller's raw estimate, to learn the ratio from
    done: bool = False


class Throttle:
    def __init__(
        self,
        tokens_per_window: int = 0,
        requests_per_window: int = 0,
        items_per_window: int = 0,
        min_interval: float = 0.0,
        window: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] | None = None,
    ):
        """`sleep=None` waits on the throttle itself (woken when a call finishes); tests pass a fake clock's."""
        self.tokens_per_window = tokens_per_window
        self.requests_per_window = requests_per_window
        self.items_per_window = items_per_window
        self.min_interval = min_interval
        self.window = window
        self.clock = clock
        self.sleep = sleep
        self._tickets: deque[Ticket] = deque()
        self._lock = threading.Lock()
        self._finished = threading.Condition(self._lock)  # notified when a call finishes or is re-booked
        self._last_start = float("-inf")
        self._paused_until = float("-inf")
        self.scale = 1.0  # learned reported/estimated token ratio
        self.observations = 0  # reported counts learned from

    @classmethod
    def from_settings(cls, settings: ProviderSettings, **kwargs) -> Throttle:
        return cls(
            settings.tokens_per_minute,
            settings.requests_per_minute,
            settings.items_per_minute,
            settings.min_interval,
            settings.window,
            **kwargs,
        )

    def _expire(self, now: float) -> None:
        # Tickets are re-stamped on release, so the deque is not sorted: drop every expired one.
        if any(t.done and now - t.stamp >= self.window for t in self._tickets):
            self._tickets = deque(t for t in self._tickets if not (t.done and now - t.stamp >= self.window))

    def _wait_needed(self, now: float, tokens: int, items: int) -> float:
        """Seconds to wait before this call fits (0 = admit now); called with the lock held."""
        self._expire(now)
        waits = [self._paused_until - now, self._last_start + self.min_interval - now]
        if self._tickets:
            budgets = (
                (self.tokens_per_window, tokens, lambda t: t.tokens),
                (self.requests_per_window, 1, lambda t: 1),
                (self.items_per_window, items, lambda t: t.items),
            )
            for budget, need, weight in budgets:
                if budget <= 0:
                    continue
                used = sum(weight(t) for t in self._tickets)
                if used + need <= budget:
                    continue
                # Free budget by expiring the oldest finished tickets; an unfinished one frees nothing yet.
                # A call larger than the whole budget goes through alone: everything must expire first.
                excess = used if need > budget else used + need - budget
                freed, wait = 0, None
                for t in sorted((t for t in self._tickets if t.done), key=lambda t: t.stamp):
                    freed += weight(t)
                    if freed >= excess:
                        wait = t.stamp + self.window - now
                        break
                waits.append(wait if wait is not None else self.window / 100)
        return max(0.0, *waits)

    def acquire(self, tokens: int = 0, items: int = 1) -> tuple[Ticket, float]:
        """Block until the call fits; returns its ticket and the seconds spent waiting."""
        waited = 0.0
        while True:
            with self._lock:
                now = self.clock()
                booked = math.ceil(tokens * self.scale)
                wait = self._wait_needed(now, booked, items)
                if wait <= 0:
                    ticket = Ticket(now, booked, items, estimate=tokens)
                    self._tickets.append(ticket)
                    self._last_start = now
                    return ticket, waited
                if self.sleep is None:
                    self._finished.wait(wait)
                    waited += self.clock() - now
                    continue
            self.sleep(wait)
            waited += wait

    def release(self, ticket: Ticket, tokens: int | None = None) -> None:
        """The call finished: re-stamp it now and, when the provider reported it, use its token count."""
        with self._lock:
            ticket.stamp = self.clock()
            if tokens is not None:
                ticket.tokens = tokens
                if ticket.estimate > 0 and tokens > 0:
                    self._learn(tokens / ticket.estimate)
            ticket.done = True
            self._finished.notify_all()

    def _learn(self, observed: float) -> None:
        """Take the first observed ratio as it is, average later ones in; re-book calls in flight at it."""
        learned = observed if self.observations == 0 else (1 - SCALE_ALPHA) * self.scale + SCALE_ALPHA * observed
        self.observations += 1
        self.scale = min(SCALE_MAX, max(SCALE_MIN, learned))
        for in_flight in self._tickets:
            if not in_flight.done and in_flight.estimate > 0:
                in_flight.tokens = math.ceil(in_flight.estimate * self.scale)

    def pause(self, seconds: float) -> None:
        """Hold every thread's next call for `seconds` (the provider said it is over budget)."""
        with self._lock:
            self._paused_until = max(self._paused_until, self.clock() + seconds)


_throttles: dict[tuple, Throttle] = {}
_registry_lock = threading.Lock()


def get_throttle(settings: ProviderSettings) -> Throttle:
    """The process-wide throttle for this provider and these budgets."""
    with _registry_lock:
        throttle = _throttles.get(settings.key)
        if throttle is None:
            throttle = _throttles[settings.key] = Throttle.from_settings(settings)
        return throttle


def reset_throttles() -> None:
    """Forget every process-wide throttle (tests start each case with fresh budgets)."""
    with _registry_lock:
        _throttles.clear()


def batch_token_cap(settings: ProviderSettings, costs: list[int], what: str, share: float = 0.5) -> int | None:
    """The most estimated tokens one request may carry under this per-minute budget (None: no budget).

    A request larger than the provider's whole budget is refused with a 429 however long we wait, so
    requests are capped at `share` of the budget (embedding batches take half, leaving room to
    overlap), in estimated tokens times the learned ratio of reported to estimated tokens. One item
    too large on its own is refused here, naming the option to raise."""
    from ..base.errors import UsageError

    if not settings.tokens_per_minute or not costs:
        return None
    scale = get_throttle(settings).scale
    largest = max(range(len(costs)), key=costs.__getitem__)
    if costs[largest] * scale > settings.tokens_per_minute:
        raise UsageError(
            f"{what}: item {largest} needs about {math.ceil(costs[largest] * scale):,} tokens, more than "
            f"the whole budget of {settings.tokens_per_minute:,} tokens per minute",
            f"raise --{settings.provider}-tpm (0 = no budget)",
        )
    return max(1, int(settings.tokens_per_minute * share / scale))

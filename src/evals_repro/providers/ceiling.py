"""`--max-cost USD`: before the work, a plan past the ceiling is refused (`check_ceiling`); during it, no
request starts that could carry the spend past the ceiling.

One guard per process (every thread and every worker's Usage share it). Before a call, its estimated
cost (the units the throttle books, priced) is reserved; the call is refused when what was spent,
plus what calls in flight reserved, plus its own estimate passes the ceiling. When the call returns,
the reservation is replaced by the cost of what the provider billed. A refusal is `CostCeilingReached`:
the work stops there, everything already paid for is kept (caches, journals, records), and `--resume`
continues from it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..base.errors import EvalsError, UsageError
from .prices import PriceTable, usd_text

if TYPE_CHECKING:
    from .plan import Plan


class CostCeilingReached(EvalsError):
    """The next request would pass --max-cost; the work stopped before sending it."""


class CostGuard:
    def __init__(self, ceiling: float, table: PriceTable, spent: float = 0.0) -> None:
        self.ceiling = ceiling
        self.table = table
        self.spent = spent
        self.reserved = 0.0
        self._lock = threading.Lock()

    def _price(self, provider: str, model: str, units: dict[str, float]) -> float:
        total = 0.0
        for unit, amount in units.items():
            if not amount:
                continue
            price = self.table.price(provider, model, unit)
            if price is None:
                raise CostCeilingReached(
                    f"--max-cost {usd_text(self.ceiling)}: price unknown for {provider} {model} ({unit}), "
                    "so its calls cannot be bounded",
                    "give its price with --prices FILE, or drop --max-cost",
                )
            total += price.cost(amount)
        return total

    def admit(self, provider: str, model: str, estimate: dict[str, float]) -> float:
        """Reserve this call's estimated cost, or raise CostCeilingReached; returns the reservation."""
        cost = self._price(provider, model, estimate)
        with self._lock:
            if self.spent + self.reserved + cost > self.ceiling:
                raise CostCeilingReached(
                    f"stopped before a {provider} {model} request of about {usd_text(cost)}: "
                    f"{usd_text(self.spent)} spent (+{usd_text(self.reserved)} in flight) of --max-cost "
                    f"{usd_text(self.ceiling)}",
                    "everything paid for is kept: rerun with --resume (and a higher --max-cost) to continue",
                )
            self.reserved += cost
        return cost

    def settle(self, reservation: float, provider: str, model: str, billed: dict[str, float] | None) -> None:
        """The call ended: drop its reservation and count what it billed (None: nothing, it failed)."""
        cost = 0.0
        if billed:
            try:
                cost = self._price(provider, model, billed)
            except CostCeilingReached:
                cost = reservation
        with self._lock:
            self.reserved = max(0.0, self.reserved - reservation)
            self.spent += cost


_guard: CostGuard | None = None
_lock = threading.Lock()


def install_guard(guard: CostGuard | None) -> None:
    """Make `guard` the process's ceiling (None removes it)."""
    global _guard
    with _lock:
        _guard = guard


def current_guard() -> CostGuard | None:
    with _lock:
        return _guard


def check_ceiling(plan: Plan, table: PriceTable, max_cost: float) -> None:
    """Refuse to start when the plan could not see all the work, when its cost cannot be known, or when it
    passes --max-cost: at the top of a first guess's range, where no run has calibrated a model yet."""
    if plan.incomplete:
        raise UsageError(
            f"--max-cost {usd_text(max_cost)}: the plan is incomplete ({plan.incomplete}: their data could not be "
            "loaded), so the cost of that work is unknown",
            "see --plan for why each was not planned; fix that and plan again, or choose the planned ones with -s",
        )
    costing = plan.costing(table, "high")
    if costing.unknown:
        raise UsageError(
            f"--max-cost {usd_text(max_cost)}: the plan's cost is unknown (price unknown: {', '.join(costing.unknown)})",
            "give the missing prices with --prices FILE, or see --plan for the details",
        )
    if costing.usd > max_cost:
        point = plan.costing(table).usd
        shown = usd_text(costing.usd)
        if plan.guessed and point != costing.usd:
            shown = f"up to {shown} (a first guess: {usd_text(point)} at 0.75 words a token)"
        raise UsageError(
            f"the plan costs {shown}, over --max-cost {usd_text(max_cost)}",
            "see --plan for the details, or raise --max-cost",
        )

"""The money options every paid command shares (`--plan`, `--max-cost USD`, `--prices FILE`) and
`evals-repro prices`, the price table they use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, TypeVar

import typer

from .application import app
from .groups import OptionGroup, option

T = TypeVar("T")

PLAN_HELP = (
    "Print what it would send and cost (per provider and model), without a key or a paid request (public data "
    "not cached yet is downloaded first); exit."
)
MAX_COST_HELP = "Refuse to start past this cost (USD, by the plan); stop before a request that would pass it."
PRICES_HELP = "A price file (JSON, like the shipped table) whose entries override the shipped prices."

PRICES = typer.Option(None, "--prices", show_default="the shipped table", help=PRICES_HELP)
MAX_COST = typer.Option(None, "--max-cost", min=0, show_default="none: no ceiling", help=MAX_COST_HELP)


@dataclass
class Money(OptionGroup):
    """`--plan`, `--max-cost USD`, `--prices FILE`: what every paid command asks before and while it spends."""

    plan: bool = option(False, "--plan", help=PLAN_HELP)
    max_cost: Optional[float] = MAX_COST
    prices: Optional[Path] = PRICES

    def gate(self, make_plan: Callable[[], Any]) -> Any:
        """Select the prices; with --plan print the plan and return None (the command stops); with --max-cost
        refuse a plan past it. Otherwise returns the price table the work is priced with."""
        from ..providers.ceiling import check_ceiling
        from ..providers.prices import use_prices

        table = use_prices(self.prices)
        if self.plan or self.max_cost is not None:
            planned = make_plan()
            if self.plan:
                typer.echo(planned.render(table))
                return None
            check_ceiling(planned, table, self.max_cost)  # type: ignore[arg-type]
        return table

    def within(self, work: Callable[[], T], table: Any) -> T:
        """`work()` under `--max-cost` (no ceiling when None); the ceiling is removed afterwards."""
        if self.max_cost is None:
            return work()
        from ..providers.ceiling import CostGuard, install_guard

        install_guard(CostGuard(self.max_cost, table))
        try:
            return work()
        finally:
            install_guard(None)


@app.command("prices")
def prices_command(prices: Optional[Path] = PRICES) -> None:
    """List every price with its page and dates, and what is billed without a price."""
    from ..planning.prices import billables, render_prices
    from ..providers.prices import load_prices

    table = load_prices(prices)  # a bad file is refused here, before the components are imported
    typer.echo(render_prices(table, billables()))

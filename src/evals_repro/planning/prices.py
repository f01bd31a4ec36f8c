"""`evals-repro prices`: the price table as a user checks it before paying, and what it cannot price.

Every price is listed with its page, the date that page gives, the day it was read and the table's date.
Then what the built-in paid methods and rerankers bill but the table has no price for (their cost is
"price unknown" and `--max-cost` refuses them until `--prices FILE` prices them), found by asking each
component what it bills (built as a plan builds it: no key, nothing sent), and what has no price by nature
(servers of your own).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from ..providers.prices import SELF_HOSTED, UNITS, Price, PriceTable


@dataclass(frozen=True)
class Billable:
    """A unit a built-in component bills, and the name a user runs it under."""

    provider: str
    model: str
    unit: str
    used_by: str


def _png() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (1, 1)).save(buffer, format="PNG")
    return buffer.getvalue()


def _units(bills: Any, *args: Any) -> list[str]:
    return sorted(unit for unit, amount in bills(*args).items() if amount)


def billables() -> list[Billable]:
    """What the built-in hosted embedders, rerankers and Mixedbread stores bill, per provider model and unit."""
    from ..base.context import MethodContext
    from ..base.registry import EMBEDDERS, RERANKERS
    from ..embedders.base import EmbedItem
    from ..stores.common import STORE_MODEL

    ctx = MethodContext(benchmark="prices", planning=True)
    found: list[Billable] = []
    for entry in EMBEDDERS.entries():
        if entry.plugin is not None or entry.key_env is None:
            continue  # local, a plugin (billed as provider "plugin"), or a family such as openai:<model>
        embedder = entry.factory(entry.name, ctx)
        items = [[EmbedItem(text="text")]]
        if "images" in entry.contents:
            items.append([EmbedItem(image=_png())])
        for batch in items:
            for unit in _units(embedder.billed_units, batch, 1):
                found.append(Billable(embedder.provider, embedder.model, unit, entry.name))
    for entry in RERANKERS.entries():
        if entry.plugin is not None or entry.key_env is None:
            continue  # offline, or on servers of your own
        for model in entry.extra.get("models", ()):
            reranker = entry.factory(entry.name, model, ctx)
            for unit in _units(reranker.billed_units, 1, 1):
                found.append(Billable(reranker.provider, reranker.model, unit, f"+{entry.name}:{model}"))
    for unit in UNITS:
        if unit.startswith("store_"):  # prices.UNITS: the store units are what Mixedbread stores bill
            found.append(Billable("mixedbread", STORE_MODEL, unit, "mixedbread-upload, mixedbread-* methods"))
    return found


def self_hosted_names() -> list[str]:
    """The built-in components that only ever run on servers of your own."""
    from ..rerankers.api_endpoint import PROVIDER
    from ..rerankers.local_models import LOCAL_RERANKERS

    return [f"+{PROVIDER}:<model>", *(f"+{name}" for name in sorted(LOCAL_RERANKERS))]


def _per(price: Price) -> str:
    for size, word in ((1e9, "1B"), (1e6, "1M"), (1e3, "1K")):
        if price.per == size:
            return word
    return f"{price.per:g}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *rows]]


def render_prices(table: PriceTable, found: list[Billable]) -> str:
    """The table, its notes, the prices it lacks and what has none by nature."""
    source = "the shipped table" if table.source == "shipped" else f"{table.source} over the shipped table"
    lines = [f"prices of {table.date} ({source}); USD at list price, per the unit named"]
    prices = sorted(table.prices.values(), key=lambda p: (p.provider, p.model, p.unit))
    rows = [
        [
            p.provider,
            p.model,
            p.unit,
            f"${p.usd:.2f} per {_per(p)}" if round(p.usd, 2) == p.usd else f"${p.usd:g} per {_per(p)}",
            p.read or "not given",
            p.read_on or "not given",
            p.source or "not given",
        ]
        for p in prices
    ]
    lines += _table(["provider", "model", "unit", "price", "page's date", "read on", "source"], rows)
    notes = [f"  {p.provider} {p.model} ({p.unit}): {p.note}" for p in prices if p.note]
    if notes:
        lines += ["notes:", *notes]
    missing: dict[tuple[str, str, str], list[str]] = {}
    for item in found:
        if table.price(item.provider, item.model, item.unit) is None:
            missing.setdefault((item.provider, item.model, item.unit), []).append(item.used_by)
    lines.append(
        'price unknown (billed, but not in this table: a cost names it as "price unknown" and --max-cost refuses '
        "it until --prices FILE prices it):"
    )
    lines += [f"  {p} {m} ({u}): {', '.join(users)}" for (p, m, u), users in sorted(missing.items())]
    chat = {(p.provider, p.model) for p in prices if p.unit == "output_tokens"}
    embedders = sorted(p.model for p in prices if p.provider == "openai" and ("openai", p.model) not in chat)
    lines += [
        f"  openai:<model> at api.openai.com, except {', '.join(embedders)}" if embedders else "  openai:<model>",
        "  generator and judge models of answer and grounding (gemini:<model>, openai:<model> at api.openai.com) "
        "not priced above",
        '  plugins: billed as provider "plugin" under their own names',
        f"{SELF_HOSTED}: openai:<model> at a --base-url of your own, {', '.join(self_hosted_names())}, "
        "and answer's and grounding's openai:<model> at an OPENAI_BASE_URL of your own",
    ]
    return "\n".join(lines)

"""The price table: list prices per provider model and billing unit, each with the page it was read from.

The package ships `prices.json` (dated; every price names its public page, the date that page gives and the
day it was read); `--prices FILE` replaces it for a command: a file of the same layout, whose entries
override the shipped ones by (provider, model, unit) and may add others. A model with billed units but no
price is "price unknown" by name: it is never counted as free. Work on a server of your own (`rerank-api:`,
the vLLM rerankers, `openai:` at another base URL) has no list price: it is "self-hosted: no price"
(`SELF_HOSTED`), worded here once for records, plans, reports and the HTML page.

Units: `input_tokens`, `output_tokens`, `image_tokens` (images billed as tokens), `pixels`, `searches`
(Cohere rerank: one query with up to 100 documents), and Mixedbread stores' `store_tokens` and
`store_tokens_high_quality` (indexing text with fast or high-quality parsing), `store_image_pages` (indexing
page images), `store_token_months` (storage), `store_queries` and `store_rerank_queries`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..base.errors import DataError, choices

UNITS = (
    "input_tokens",
    "output_tokens",
    "image_tokens",
    "pixels",
    "searches",
    "store_tokens",
    "store_tokens_high_quality",
    "store_image_pages",
    "store_token_months",
    "store_queries",
    "store_rerank_queries",
)
SHIPPED = "prices.json"

Billed = dict[tuple[str, str, str], float]  # (provider, model, unit) -> amount


@dataclass(frozen=True)
class Price:
    provider: str
    model: str
    unit: str
    usd: float  # per `per` units
    per: float
    source: str  # the public page the price was read from
    read: str  # the date that page gives ("not dated on the page" when it gives none)
    note: str = ""
    read_on: str = ""  # the day the page was read (YYYY-MM-DD); "" in a file that does not say

    def cost(self, amount: float) -> float:
        return amount * self.usd / self.per


SELF_HOSTED = "self-hosted: no price"  # what work on a server of your own costs, wherever a cost is shown


def usd_text(usd: float) -> str:
    """Dollars as a reader wants them: $1,234.57, $0.42, $0.000123 (small sums keep 3 significant digits)."""
    if usd == 0:
        return "$0"
    if usd >= 0.1:
        return f"${usd:,.2f}"
    return f"${usd:.3g}" if usd >= 1e-4 else f"${usd:.2e}"


def cost_text(usd: float, unknown: list[str], self_hosted: bool) -> str:
    """A cost as every record, plan, report and page shows it: `$1.23`, `price unknown: <model (unit)>`,
    `self-hosted: no price`, or those joined by ` + ` (a priced part of $0 beside the others is left out)."""
    parts = [usd_text(usd)] if usd or not (unknown or self_hosted) else []
    if unknown:
        parts.append(f"price unknown: {', '.join(unknown)}")
    if self_hosted:
        parts.append(SELF_HOSTED)
    return " + ".join(parts)


@dataclass
class Costing:
    """Billed units priced: the sum of what has a price, and every model (and unit) that has none."""

    usd: float
    unknown: list[str]  # "provider model (unit)" billed but unpriced
    by_model: dict[str, float | None]  # "provider model" -> USD, None when any of its units has no price
    date: str  # the price table's date
    source: str  # "shipped" or the --prices file
    self_hosted: list[str] = field(default_factory=list)  # "provider model" served by your own servers: no price

    @property
    def known(self) -> bool:
        return not self.unknown

    def text(self) -> str:
        return cost_text(self.usd, self.unknown, bool(self.self_hosted))

    def as_dict(self) -> dict[str, Any]:
        """What result records and manifests keep: USD (None when a model has no price), per model, the table's date."""
        return {
            "usd": round(self.usd, 8) if self.known else None,
            "usd_priced": round(self.usd, 8),
            "price_unknown": list(self.unknown),
            "by_model": {k: (round(v, 8) if v is not None else None) for k, v in self.by_model.items()},
            "prices_date": self.date,
            "prices": self.source,
            "self_hosted": list(self.self_hosted),
        }


@dataclass
class PriceTable:
    date: str
    source: str  # "shipped" or the path of a --prices file
    prices: dict[tuple[str, str, str], Price] = field(default_factory=dict)

    def price(self, provider: str, model: str, unit: str) -> Price | None:
        return self.prices.get((provider, model, unit))

    def cost(self, billed: Billed, self_hosted: Iterable[str] = ()) -> Costing:
        """Billed units priced; `self_hosted` names the "provider model"s whose work has no price."""
        usd = 0.0
        unknown: list[str] = []
        by_model: dict[str, float | None] = {}
        for (provider, model, unit), amount in sorted(billed.items()):
            if not amount:
                continue
            label = f"{provider} {model}"
            price = self.price(provider, model, unit)
            if price is None:
                unknown.append(f"{label} ({unit})")
                by_model[label] = None
                continue
            part = price.cost(amount)
            usd += part
            if label not in by_model or by_model[label] is not None:
                by_model[label] = (by_model.get(label) or 0.0) + part
        return Costing(usd, unknown, by_model, self.date, self.source, sorted(set(self_hosted)))

    def merged(self, other: PriceTable) -> PriceTable:
        return PriceTable(other.date, other.source, {**self.prices, **other.prices})


def _entry(raw: Any, where: str) -> Price:
    if not isinstance(raw, dict):
        raise DataError(f"{where} is not an object", 'write {"provider": ..., "model": ..., "unit": ..., "usd": ...}')
    for key in ("provider", "model", "unit", "usd"):
        if key not in raw:
            raise DataError(f"{where} has no '{key}'", "give provider, model, unit, usd (and per, source, read)")
    if raw["unit"] not in UNITS:
        raise DataError(f"{where}: unknown unit '{raw['unit']}'", f"choose from {choices(UNITS)}")
    try:
        usd = float(raw["usd"])
        per = float(raw.get("per", 1_000_000))
    except (TypeError, ValueError):
        raise DataError(f"{where}: usd and per must be numbers", 'e.g. "usd": 0.12, "per": 1000000') from None
    if usd < 0 or per <= 0:
        raise DataError(f"{where}: usd {usd} / per {per} is not a price", "give usd >= 0 and per > 0")
    return Price(
        str(raw["provider"]),
        str(raw["model"]),
        str(raw["unit"]),
        usd,
        per,
        str(raw.get("source", "")),
        str(raw.get("read", "")),
        str(raw.get("note", "")),
        str(raw.get("read_on", "")),
    )


def parse_table(text: str, source: str) -> PriceTable:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{source}: not JSON ({exc})", "write a price file like the shipped prices.json") from None
    if not isinstance(data, dict) or not isinstance(data.get("prices"), list):
        raise DataError(f"{source}: no 'prices' list", 'write {"date": "YYYY-MM-DD", "prices": [...]}')
    table = PriceTable(str(data.get("date") or "undated"), source)
    for index, raw in enumerate(data["prices"]):
        price = _entry(raw, f"{source}: prices[{index}]")
        table.prices[(price.provider, price.model, price.unit)] = price
    return table


def shipped_prices() -> PriceTable:
    text = resources.files(__package__).joinpath(SHIPPED).read_text("utf-8")
    return parse_table(text, "shipped")


def load_prices(path: Path | str | None = None) -> PriceTable:
    """The shipped table, with a `--prices` file's entries over it."""
    table = shipped_prices()
    if path is None:
        return table
    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise DataError(
            f"--prices {path}: cannot read it ({exc.strerror or exc})", "give a readable JSON file"
        ) from None
    except UnicodeDecodeError as exc:
        raise DataError(
            f"--prices {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
            "save the price file as UTF-8 JSON, like the shipped prices.json",
        ) from None
    return table.merged(parse_table(text, str(path)))


_current: PriceTable | None = None
_lock = threading.Lock()


def use_prices(path: Path | str | None) -> PriceTable:
    """Select the table this process prices with (a command's `--prices`); returns it."""
    global _current
    table = load_prices(path)
    with _lock:
        _current = table
    return table


def current_prices() -> PriceTable:
    global _current
    with _lock:
        if _current is None:
            _current = shipped_prices()
        return _current


def reset_prices() -> None:
    """Back to the shipped table (tests)."""
    global _current
    with _lock:
        _current = None


def cost_of(billed: Billed, self_hosted: Iterable[str] = ()) -> Costing:
    return current_prices().cost(billed, self_hosted)


def spend_text(usage_summary: str, billed: Billed, self_hosted: Iterable[str] = ()) -> str:
    """A spend summary line with its cost: `<counters>, cost $1.23 (prices of 2026-12-06)`."""
    served = list(self_hosted)
    if not billed and not served:
        return usage_summary
    costing = cost_of(billed, served)
    dated = f" (prices of {costing.date})" if costing.by_model else ""  # nothing priced: no table to date
    return f"{usage_summary}, cost {costing.text()}{dated}"

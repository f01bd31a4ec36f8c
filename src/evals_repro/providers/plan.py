"""A plan of paid work before it is done: per provider and model, the requests, items, estimated tokens and
pixels, what caches and journals already hold, the time at the configured budgets, and the cost.

Whoever sends requests counts them here the way it would send them (the same batch plans, the same
token estimates the throttles book), so a plan's requests are the requests a run makes. `Plan.billed()`
holds the estimated billed units, priced by the price table like any recorded spend.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from .batching import estimate_tokens
from .prices import Billed, Costing, PriceTable
from .settings import ProviderSettings

WORDS_PER_TOKEN = 0.75  # "100 tokens is about 75 words" (OpenAI); Gemini's docs: 60-80 English words
_WORD = re.compile(r"\w+")
_IDEOGRAPH = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]")  # CJK, kana, hangul: a token or more each


def central_tokens(text: str | None) -> float:
    """A plan's first guess at a model's token count (words / 0.75; an ideograph a token), where the
    throttle's estimate (`batching.estimate_tokens`) leans high on purpose."""
    if not text:
        return 0.0
    ideographs = len(_IDEOGRAPH.findall(text))
    words = len(_WORD.findall(_IDEOGRAPH.sub(" ", text))) if ideographs else len(_WORD.findall(text))
    return words / WORDS_PER_TOKEN + ideographs


def text_prior(texts: Iterable[str | None]) -> float | None:
    """central / throttle estimate over these texts: how a plan scales a model no run has calibrated yet."""
    central = throttle = 0.0
    for text in texts:
        if text:
            central += central_tokens(text)
            throttle += estimate_tokens(text)
    return central / throttle if central > 0 and throttle > 0 else None


@dataclass
class PlanLine:
    provider: str
    model: str
    what: str  # e.g. "documents", "queries", "rerank", "generation"
    requests: int = 0
    items: int = 0  # items to send (pages, queries, documents reranked, prompts)
    held: int = 0  # items already held (cache, journal, study records): not sent again
    tokens: int = 0  # estimated tokens, as the throttle books them
    units: dict[str, float] = field(default_factory=dict)  # estimated billed units


@dataclass
class Plan:
    lines: dict[tuple[str, str, str], PlanLine] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    budgets: dict[tuple, ProviderSettings] = field(default_factory=dict)  # settings.key -> settings
    budget_use: dict[tuple, list[float]] = field(default_factory=dict)  # settings.key -> [requests, tokens, items]
    ratios: dict[tuple[str, str], float] = field(default_factory=dict)  # (provider, model) -> reported / estimated
    uncalibrated: list[str] = field(default_factory=list)  # "provider model" planned at the raw estimate

    def tokens(self, provider: str, model: str, estimated: int, prior: float | None = None) -> int:
        """Estimated tokens in the model's own count: scaled by what earlier runs saw it report, else by
        `prior` (`text_prior` of the texts sent; None where images decide)."""
        ratio = self.ratios.get((provider, model))
        if ratio is None:
            if f"{provider} {model}" not in self.uncalibrated:
                self.uncalibrated.append(f"{provider} {model}")
            return estimated if prior is None else max(1, round(estimated * prior))
        return round(estimated * ratio)

    def add(
        self,
        provider: str,
        model: str,
        what: str,
        *,
        requests: int = 0,
        items: int = 0,
        held: int = 0,
        tokens: int = 0,
        units: dict[str, float] | None = None,
        settings: ProviderSettings | None = None,
        throttle_items: int | None = None,
    ) -> None:
        """Count planned work; `throttle_items` is what the throttle books against an item budget
        (default `items`; a rerank request books 1)."""
        if not (requests or items or held or tokens or any((units or {}).values())):
            return
        line = self.lines.setdefault((provider, model, what), PlanLine(provider, model, what))
        line.requests += requests
        line.items += items
        line.held += held
        line.tokens += tokens
        for unit, amount in (units or {}).items():
            line.units[unit] = line.units.get(unit, 0) + amount
        if settings is not None and (requests or tokens):
            self.budgets[settings.key] = settings
            use = self.budget_use.setdefault(settings.key, [0.0, 0.0, 0.0])
            use[0] += requests
            use[1] += tokens
            use[2] += items if throttle_items is None else throttle_items

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    @property
    def requests(self) -> int:
        return sum(line.requests for line in self.lines.values())

    def billed(self) -> Billed:
        billed: Billed = {}
        for line in self.lines.values():
            for unit, amount in line.units.items():
                if amount:
                    key = (line.provider, line.model, unit)
                    billed[key] = billed.get(key, 0) + amount
        return billed

    def costing(self, table: PriceTable) -> Costing:
        return table.cost(self.billed())

    def minutes(self, provider: str) -> float:
        """Least wall time for a provider's requests at its per-minute budgets and minimum interval."""
        longest = 0.0
        for key, settings in self.budgets.items():
            if settings.provider != provider:
                continue
            requests, tokens, items = self.budget_use[key]
            window = settings.window / 60.0
            needs = [requests * settings.min_interval / 60.0]
            for budget, amount in (
                (settings.requests_per_minute, requests),
                (settings.tokens_per_minute, tokens),
                (settings.items_per_minute, items),
            ):
                if budget and amount > budget:  # the first window's worth goes at once
                    needs.append(math.ceil(amount / budget - 1) * window)
            longest = max(longest, *needs)
        return longest

    def render(self, table: PriceTable) -> str:
        header = ["provider", "model", "work", "requests", "items", "held", "est. tokens", "pixels", "time", "cost"]
        rows = []
        for line in sorted(self.lines.values(), key=lambda li: (li.provider, li.model, li.what)):
            cost = table.cost({(line.provider, line.model, u): a for u, a in line.units.items() if a})
            rows.append(
                [
                    line.provider,
                    line.model,
                    line.what,
                    f"{line.requests:,}",
                    f"{line.items:,}",
                    f"{line.held:,}",
                    f"{line.tokens:,}",
                    f"{int(line.units.get('pixels', 0)):,}" if line.units.get("pixels") else "",
                    "",
                    cost.text() if line.units else "$0",
                ]
            )
        for provider in sorted({line.provider for line in self.lines.values()}):
            minutes = self.minutes(provider)
            for row in rows:
                if row[0] == provider:
                    row[8] = _duration(minutes)
                    break
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths)).rstrip()]
        lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
        if not rows:
            lines = ["no paid requests"]
        total = self.costing(table)
        lines.append(
            f"total: {self.requests:,} requests, cost {total.text() if self.lines else '$0'} "
            f"(prices of {table.date}{'' if table.source == 'shipped' else ', ' + table.source}); "
            "time is the least the per-minute budgets allow (calls themselves take longer)"
        )
        if self.uncalibrated:
            lines.append(
                f"note: tokens of {', '.join(self.uncalibrated)} are a first guess (text at 0.75 words a token, "
                "images and prompts at the throttle's upper-leaning estimate): runs save what providers report, "
                "and later plans are scaled by it"
            )
        lines += [f"note: {text}" for text in self.notes]
        return "\n".join(lines)


def _duration(minutes: float) -> str:
    if minutes <= 0:
        return "no wait"
    if minutes < 1:
        return f">= {minutes * 60:.0f} s"
    if minutes < 120:
        return f">= {minutes:.0f} min"
    return f">= {minutes / 60:.1f} h"

"""A plan of paid work before it is done: per provider and model, the requests, items, estimated tokens and
pixels, what caches and journals already hold, the time at the configured budgets, and the cost.

Whoever sends requests counts them here the way it would send them (the same batch plans, the same
token estimates the throttles book), so a plan's requests are the requests a run makes. `Plan.billed()`
holds the estimated billed units, priced by the price table like any recorded spend.

Text tokens of a model no run has calibrated are a first guess with a range (`Guess`): the point at 0.75
words a token, the range from a token a word to the throttle's upper-leaning estimate (ASCII characters / 3);
`--max-cost` holds a plan to the top of its range. A plan that could not see part of the work (data that
could not be loaded) is incomplete, says so in its total, and `--max-cost` refuses it. Work on servers of
your own is counted and priced as `prices.SELF_HOSTED`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .batching import estimate_tokens
from .prices import SELF_HOSTED, Billed, Costing, PriceTable, usd_text
from .settings import ProviderSettings

WORDS_PER_TOKEN = 0.75  # "100 tokens is about 75 words" (OpenAI); Gemini's docs: 60-80 English words
_WORD = re.compile(r"\w+")
_IDEOGRAPH = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff]")  # CJK, kana, hangul: a token or more each
BOUNDS = ("low", "point", "high")


def _words(text: str) -> tuple[int, int]:
    """(words, ideographs) as the guesses count them (an ideograph is not part of a word)."""
    ideographs = len(_IDEOGRAPH.findall(text))
    words = len(_WORD.findall(_IDEOGRAPH.sub(" ", text))) if ideographs else len(_WORD.findall(text))
    return words, ideographs


def central_tokens(text: str | None) -> float:
    """A plan's first guess at a model's token count (words / 0.75; an ideograph a token), where the
    throttle's estimate (`batching.estimate_tokens`) leans high on purpose."""
    if not text:
        return 0.0
    words, ideographs = _words(text)
    return words / WORDS_PER_TOKEN + ideographs


def low_tokens(text: str | None) -> float:
    """The low end of a first guess: a token a word (subword tokenizers rarely count fewer), an ideograph a token."""
    if not text:
        return 0.0
    words, ideographs = _words(text)
    return float(words + ideographs)


@dataclass(frozen=True)
class Prior:
    """A first guess over texts, as fractions of the throttle's estimate of the same texts: the low end, the
    point and the high end (the throttle's estimate itself, or the point where that is higher)."""

    low: float
    point: float
    high: float


def text_prior(texts: Iterable[str | None]) -> Prior | None:
    """How a plan scales the throttle's estimate of these texts for a model no run has calibrated yet."""
    low = central = throttle = 0.0
    for text in texts:
        if text:
            low += low_tokens(text)
            central += central_tokens(text)
            throttle += estimate_tokens(text)
    if central <= 0 or throttle <= 0:
        return None
    return Prior(low / throttle, central / throttle, max(1.0, central / throttle))


@dataclass(frozen=True)
class Guess:
    """Estimated tokens: the point a plan prints and its range (all three equal once calibrated)."""

    low: int
    point: int
    high: int

    @classmethod
    def exact(cls, tokens: int) -> Guess:
        return cls(tokens, tokens, tokens)

    def __add__(self, other: Guess | int) -> Guess:
        other = other if isinstance(other, Guess) else Guess.exact(int(other))
        return Guess(self.low + other.low, self.point + other.point, self.high + other.high)

    def at(self, bound: str) -> int:
        return int(getattr(self, bound))


Units = dict[str, float]


@dataclass
class PlanLine:
    provider: str
    model: str
    what: str  # e.g. "documents", "queries", "rerank", "generation"
    requests: int = 0
    items: int = 0  # items to send (pages, queries, documents reranked, prompts)
    held: int = 0  # items already held (cache, journal, study records): not sent again
    tokens: int = 0  # estimated tokens (the point of a first guess)
    units: Units = field(default_factory=dict)  # estimated billed units
    tokens_low: int = 0  # a first guess's range (equal to `tokens` when calibrated or exact)
    tokens_high: int = 0
    units_low: Units = field(default_factory=dict)
    units_high: Units = field(default_factory=dict)
    self_hosted: bool = False  # a server of your own: counted, never priced

    def units_at(self, bound: str) -> Units:
        return {"low": self.units_low, "point": self.units, "high": self.units_high}[bound]

    @property
    def guessed(self) -> bool:
        return self.tokens_low != self.tokens_high or self.units_low != self.units_high


@dataclass
class Plan:
    lines: dict[tuple[str, str, str], PlanLine] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    budgets: dict[tuple, ProviderSettings] = field(default_factory=dict)  # settings.key -> settings
    budget_use: dict[tuple, list[float]] = field(default_factory=dict)  # settings.key -> [requests, tokens, items]
    ratios: dict[tuple[str, str], float] = field(default_factory=dict)  # (provider, model) -> reported / estimated
    uncalibrated: list[str] = field(default_factory=list)  # "provider model" planned at a first guess
    parts: int = 0  # subsets (or domains) the plan set out to see
    part_kind: str = "subsets"
    not_planned: list[str] = field(default_factory=list)  # those it could not see (their data did not load)

    def guess(self, provider: str, model: str, estimated: int, prior: Prior | None = None) -> Guess:
        """Estimated tokens in the model's own count: scaled by what earlier runs saw it report, else a first
        guess from `prior` (`text_prior` of the texts sent; None where images decide: the throttle's
        upper-leaning estimate, no range)."""
        ratio = self.ratios.get((provider, model))
        if ratio is not None:
            return Guess.exact(round(estimated * ratio))
        if f"{provider} {model}" not in self.uncalibrated:
            self.uncalibrated.append(f"{provider} {model}")
        if prior is None:
            return Guess.exact(estimated)
        return Guess(*(max(1, round(estimated * getattr(prior, bound))) for bound in BOUNDS))

    def scope(self, parts: int, kind: str = "subsets") -> None:
        """The plan sets out to see `parts` subsets (or domains)."""
        self.parts, self.part_kind = parts, kind

    def cannot_see(self, name: str, why: str) -> None:
        """A part whose data could not be loaded: the plan is incomplete (said in its total; --max-cost refuses)."""
        if name not in self.not_planned:
            self.not_planned.append(name)
        self.note(f"{name}: not planned: {why}")

    @property
    def incomplete(self) -> str | None:
        """ "8 of 8 subsets not planned" when the plan could not see part of the work, else None."""
        if not self.not_planned:
            return None
        return f"{len(self.not_planned)} of {max(self.parts, len(self.not_planned))} {self.part_kind} not planned"

    def add(
        self,
        provider: str,
        model: str,
        what: str,
        *,
        requests: int = 0,
        items: int = 0,
        held: int = 0,
        tokens: int | Guess = 0,
        units: Units | Callable[[int], Units] | None = None,
        units_range: tuple[Units, Units] | None = None,
        settings: ProviderSettings | None = None,
        throttle_items: int | None = None,
        self_hosted: bool = False,
    ) -> None:
        """Count planned work. `tokens` may be a `Guess`; `units` a dict, or a function of the tokens (then
        billed at each end of the guess too); `units_range` gives the ends explicitly. `throttle_items` is
        what the throttle books against an item budget (default `items`; a rerank request books 1).
        `self_hosted`: a server of your own, counted but never priced."""
        guess = tokens if isinstance(tokens, Guess) else Guess.exact(tokens)
        if callable(units):
            billed = {bound: units(guess.at(bound)) for bound in BOUNDS}
        else:
            low, high = units_range or (units or {}, units or {})
            billed = {"low": low, "point": units or {}, "high": high}
        if self_hosted:
            billed = {bound: {} for bound in BOUNDS}
        if not (requests or items or held or guess.high or any(billed["point"].values())):
            return
        line = self.lines.setdefault((provider, model, what), PlanLine(provider, model, what))
        line.self_hosted = line.self_hosted or self_hosted
        line.requests += requests
        line.items += items
        line.held += held
        line.tokens += guess.point
        line.tokens_low += guess.low
        line.tokens_high += guess.high
        for bound in BOUNDS:
            into = line.units_at(bound)
            for unit, amount in billed[bound].items():
                into[unit] = into.get(unit, 0) + amount
        if settings is not None and (requests or guess.point):
            self.budgets[settings.key] = settings
            use = self.budget_use.setdefault(settings.key, [0.0, 0.0, 0.0])
            use[0] += requests
            use[1] += guess.point
            use[2] += items if throttle_items is None else throttle_items

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    @property
    def requests(self) -> int:
        return sum(line.requests for line in self.lines.values())

    def billed(self, bound: str = "point") -> Billed:
        """Estimated billed units, at the point of every first guess or at one end of its range."""
        billed: Billed = {}
        for line in self.lines.values():
            for unit, amount in line.units_at(bound).items():
                if amount:
                    key = (line.provider, line.model, unit)
                    billed[key] = billed.get(key, 0) + amount
        return billed

    def self_hosted(self) -> list[str]:
        return sorted({f"{line.provider} {line.model}" for line in self.lines.values() if line.self_hosted})

    @property
    def guessed(self) -> bool:
        """Some priced work is a first guess with a range (no run has calibrated its model yet)."""
        return any(line.guessed for line in self.lines.values() if not line.self_hosted)

    def costing(self, table: PriceTable, bound: str = "point") -> Costing:
        return table.cost(self.billed(bound), self.self_hosted())

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
            rows.append(
                [
                    line.provider,
                    line.model,
                    line.what,
                    f"{line.requests:,}",
                    f"{line.items:,}",
                    f"{line.held:,}",
                    f"{line.tokens:,}"
                    + (f" ({line.tokens_low:,}-{line.tokens_high:,})" if line.tokens_low != line.tokens_high else ""),
                    f"{int(line.units.get('pixels', 0)):,}" if line.units.get("pixels") else "",
                    "",
                    _line_cost(line, table),
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
            lines = ["no paid requests" + (" in what could be planned" if self.incomplete else "")]
        total = self.costing(table)
        cost = total.text()
        if self.guessed:
            top = self.costing(table, "high")
            if top.known and top.usd != total.usd:
                cost += f" (a first guess: {usd_text(self.costing(table, 'low').usd)} to {usd_text(top.usd)})"
        scope = f" (incomplete: {self.incomplete}, see the notes)" if self.incomplete else ""
        lines.append(
            f"total{scope}: {self.requests:,} requests, cost {cost}"
            f"{' for what was planned' if self.incomplete else ''} "
            f"(prices of {table.date}{'' if table.source == 'shipped' else ', ' + table.source}); "
            "time is the least the per-minute budgets allow (calls themselves take longer)"
        )
        priced = {f"{li.provider} {li.model}" for li in self.lines.values() if not li.self_hosted}
        guessed = [name for name in self.uncalibrated if name in priced]
        if guessed:
            lines.append(
                f"note: tokens of {', '.join(guessed)} are a first guess: text at 0.75 words a token, in a range "
                "from a token a word to 3 characters a token (images and prompts at the throttle's upper-leaning "
                "estimate); --max-cost holds the plan to the top of the range; runs save what providers report, "
                "and later plans are scaled by it"
            )
        if self.incomplete:
            lines.append(
                f"note: incomplete: {self.incomplete} (their data could not be loaded, each is named below), so "
                "their requests are not counted and --max-cost refuses this plan"
            )
        lines += [f"note: {text}" for text in self.notes]
        return "\n".join(lines)


def _line_cost(line: PlanLine, table: PriceTable) -> str:
    """A row's cost: the point, with a first guess's range beside it; self-hosted work has no price."""
    if line.self_hosted:
        return SELF_HOSTED
    if not line.units:
        return "$0"

    def priced(bound: str) -> Costing:
        units = line.units_at(bound)
        return table.cost({(line.provider, line.model, u): a for u, a in units.items() if a})

    point = priced("point")
    if line.guessed and point.known:
        low, high = priced("low"), priced("high")
        if low.usd != high.usd:
            return f"{point.text()} ({usd_text(low.usd)}-{usd_text(high.usd)})"
    return point.text()


def _duration(minutes: float) -> str:
    if minutes <= 0:
        return "no wait"
    if minutes < 1:
        return f">= {minutes * 60:.0f} s"
    if minutes < 120:
        return f">= {minutes:.0f} min"
    return f">= {minutes / 60:.1f} h"

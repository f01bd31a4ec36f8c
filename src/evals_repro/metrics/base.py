"""The measure interface: a `Measure` is one named number per query, a `Family` parses and computes them.

Families are pluggable (ir_measures style): each module declares one family, `register()` adds
it, and `evaluate` hands every family the measures it parsed. Families that share a backend
(every pytrec_eval family) are computed in one pass.

A name is parsed as given first (trec_eval spellings are case-sensitive: `P.5,10`, `Rprec`),
then lower-cased with `@` read as `_at_` (`nDCG@10` -> `ndcg_at_10`). One spelling may name
several measures (`P.5,10`, `all_trec`): `parse_measures` expands them, `get_measure` refuses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from .protocol import ScoringProtocol

PerQuery = dict[str, dict[str, float]]


@dataclass(frozen=True)
class EvalData:
    """Everything a family may need.

    `qids` are the queries to score (every judged query, sorted as trec_eval does); `run` holds
    each one's scores as given (an empty dict for a query without results). Families apply the
    protocol's ranking themselves. `cache` lets families share per-query work in one evaluation.
    """

    qrels: Mapping[str, Mapping[str, int]]
    run: Mapping[str, Mapping[str, float]]
    qids: list[str]
    gains: Mapping[str, Mapping[str, float]] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    protocol: ScoringProtocol = field(default_factory=lambda: ScoringProtocol())
    subtopics: Mapping[str, Mapping[str, Mapping[str, int]]] | None = None
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Measure:
    """One measure. `name` is ours (`ndcg_at_10`), `trec_name` trec_eval's (`ndcg_cut_10`).

    `compute(measures, data) -> {qid: {name: value}}` is called once with every requested
    measure that shares it, so a backend can batch them. `aggregate` says how per-query values
    combine into the `all` value: "mean", "sum" (counts) or "gmean" (trec_eval's gm_map:
    exp(mean(log(max(value, 1e-5))))). `per_query_line`: printed per query with -q (trec_eval
    prints num_q, gm_map and gm_bpref only as summaries). `text` measures (runid, relstring)
    are printed by `trec_eval_lines` only; `evaluate` leaves them out.
    """

    name: str
    trec_name: str
    compute: Callable[[list[Measure], EvalData], PerQuery] = field(compare=False, repr=False)
    cutoff: int | None = None
    aggregate: str = "mean"
    integer: bool = False
    per_query_line: bool = True
    text: bool = False

    def __str__(self) -> str:
        return self.name


ParseResult = Measure | list[Measure] | None


@dataclass(frozen=True)
class Family:
    """A group of measures sharing a name pattern: `forms` are shown in errors (`ndcg_at_{k}`).

    `parse(text)` returns a Measure, a list of measures (a spelling naming several), or None.
    """

    name: str
    forms: tuple[str, ...]
    parse: Callable[[str], ParseResult]


FAMILIES: list[Family] = []
_CACHE: dict[str, list[Measure]] = {}


def register(family: Family) -> Family:
    """Add a family; later families may not reuse an existing family's name."""
    if any(existing.name == family.name for existing in FAMILIES):
        raise ValueError(f"measure family {family.name} is already registered")
    FAMILIES.append(family)
    _CACHE.clear()
    return family


def measure_forms() -> list[str]:
    return [form for family in FAMILIES for form in family.forms]


def _normalise(name: str) -> str:
    """Accept `nDCG@10`, `P@5`, `mrr@10` as spellings of `ndcg_at_10`, `p_at_5`, `mrr_at_10`."""
    return re.sub(r"\s*@\s*", "_at_", name.strip().lower())


def _unknown(name: str) -> UsageError:
    return UsageError(
        f"unknown measure '{name}'",
        f"valid forms: {', '.join(measure_forms())} (k >= 1, e.g. ndcg_at_10)",
    )


def expand_measure(name: str | Measure) -> list[Measure]:
    """Every measure one spelling names (`P.5,10` -> P_5 and P_10); UsageError if none."""
    if isinstance(name, Measure):
        return [name]
    text = str(name).strip()
    cached = _CACHE.get(text)
    if cached is not None:
        return cached
    for candidate in dict.fromkeys((text, _normalise(text))):
        for family in FAMILIES:
            parsed = family.parse(candidate)
            if parsed is not None:
                found = parsed if isinstance(parsed, list) else [parsed]
                _CACHE[text] = found
                return found
    raise _unknown(text)


def get_measure(name: str | Measure) -> Measure:
    """The one measure a name denotes; an unknown name raises UsageError listing the valid forms."""
    found = expand_measure(name)
    if len(found) != 1:
        listed = ", ".join(m.name for m in found[:4]) + (", ..." if len(found) > 4 else "")
        raise UsageError(f"'{name}' names {len(found)} measures ({listed})", "name one measure, e.g. P_5 or p_at_5")
    return found[0]


def _starts_a_measure(chunk: str) -> bool:
    """In `-m a,b`, does `b` start a new measure, or continue a's parameters (`P.5,10`, `utility.2,-1,0,0`)?"""
    chunk = chunk.strip()
    return bool(re.match(r"[A-Za-z]", chunk)) and "=" not in chunk or chunk.startswith("11pt_avg")


def split_measure_list(item: str) -> list[str]:
    """`"ndcg_at_10,map"` -> two names; `"P.5,10"` stays one (its commas separate parameters)."""
    specs: list[str] = []
    for chunk in str(item).split(","):
        if specs and not _starts_a_measure(chunk):
            specs[-1] += "," + chunk.strip()
        elif chunk.strip():
            specs.append(chunk.strip())
    return specs


def parse_measures(names: list[str] | tuple[str, ...]) -> list[str]:
    """Canonical names for user input; each item may hold several comma-separated names.

    trec_eval spellings expand (`P.5,10`, `all_trec`, `official`); duplicates are dropped, order is kept.
    """
    seen: dict[str, None] = {}
    for item in names:
        specs = [item.name] if isinstance(item, Measure) else split_measure_list(str(item))
        for spec in specs:
            for measure in expand_measure(spec):
                seen.setdefault(measure.name, None)
    if not seen:
        raise UsageError("no measure given", f"valid forms: {', '.join(measure_forms())}")
    return list(seen)

"""The measure interface: a `Measure` is one named number per query, a `Family` parses and computes them.

Families are pluggable (ir_measures style): each module declares one family, `register()` adds
it, and `evaluate` hands every family the measures it parsed. Families that share a backend
(every pytrec_eval family) are computed in one pass.
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
    """Everything a family may need: integer qrels, the run, optional float gains and options.

    `qids` are the queries to score (every query with a positive qrel, sorted as trec_eval does);
    `run` already holds an entry (possibly empty) for each of them.
    """

    qrels: Mapping[str, Mapping[str, int]]
    run: Mapping[str, Mapping[str, float]]
    qids: list[str]
    gains: Mapping[str, Mapping[str, float]] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    protocol: ScoringProtocol = field(default_factory=lambda: ScoringProtocol())
    subtopics: Mapping[str, Mapping[str, Mapping[str, int]]] | None = None


@dataclass(frozen=True)
class Measure:
    """One measure. `name` is ours (`ndcg_at_10`), `trec_name` trec_eval's (`ndcg_cut_10`).

    `compute(measures, data) -> {qid: {name: value}}` is called once with every requested
    measure that shares it, so a backend can batch them.
    """

    name: str
    trec_name: str
    compute: Callable[[list[Measure], EvalData], PerQuery] = field(compare=False, repr=False)
    cutoff: int | None = None

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Family:
    """A group of measures sharing a name pattern: `forms` are shown in errors (`ndcg_at_{k}`)."""

    name: str
    forms: tuple[str, ...]
    parse: Callable[[str], Measure | None]


FAMILIES: list[Family] = []


def register(family: Family) -> Family:
    """Add a family; later families may not reuse an existing family's name."""
    if any(existing.name == family.name for existing in FAMILIES):
        raise ValueError(f"measure family {family.name} is already registered")
    FAMILIES.append(family)
    return family


def measure_forms() -> list[str]:
    return [form for family in FAMILIES for form in family.forms]


def _normalise(name: str) -> str:
    """Accept `nDCG@10`, `P@5`, `mrr@10` as spellings of `ndcg_at_10`, `p_at_5`, `mrr_at_10`."""
    return re.sub(r"\s*@\s*", "_at_", name.strip().lower())


def get_measure(name: str | Measure) -> Measure:
    """The measure a name denotes; an unknown name raises UsageError listing the valid forms."""
    if isinstance(name, Measure):
        return name
    text = _normalise(str(name))
    for family in FAMILIES:
        measure = family.parse(text)
        if measure is not None:
            return measure
    raise UsageError(
        f"unknown measure '{name}'",
        f"valid forms: {', '.join(measure_forms())} (k >= 1, e.g. ndcg_at_10)",
    )


def parse_measures(names: list[str] | tuple[str, ...]) -> list[str]:
    """Canonical names for user input; each item may hold several comma-separated names.

    Duplicates are dropped, order is kept.
    """
    seen: dict[str, None] = {}
    for item in names:
        for part in str(item).split(","):
            if part.strip():
                seen.setdefault(get_measure(part).name, None)
    if not seen:
        raise UsageError("no measure given", f"valid forms: {', '.join(measure_forms())}")
    return list(seen)

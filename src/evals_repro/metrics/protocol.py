"""The scoring protocol and the measures it names, in one module (each needs the other).

The protocol: every choice that changes a score, in one typed, recorded value.

A result file records `ScoringProtocol.as_dict()`; `from_dict` reads it back (older files
that lack a field get its default). Two scores are comparable only under equal protocols.

- `measures`: canonical measure names (`ndcg_at_10`, `Rprec`, ...), in the requested order.
- `score_precision`: the reference reproduced. `float32`: trec_eval 9.x and pytrec_eval (scores
  compared as C floats: what mteb, BEIR and published tables used); `float64`: trec_eval 10.x
  (doubles, and its rounding of iprec_at_recall / 11pt_avg recall points to a number of relevant
  documents). Ties left are broken by doc id descending, as trec_eval does.
- `tie_rule`: ties for float-gain measures only (`ndcg_float_at_k`), which always compare
  scores exactly as given: `group-mean` (rcp-ndcg's default: a tie group is credited its mean
  gain), `doc-id` (doc id descending) or `input-order` (the order the run lists them).
- `relevance_level` (trec_eval -l): the minimum grade counted relevant by binary measures (>= 1:
  pytrec_eval refuses 0).
- `max_results` (-M): only the first N results of each query count (None: all).
- `judged_only` (-J): unjudged documents are removed from rankings before scoring.
- `complete` (-c): every judged query is scored, an absent one as an empty ranking; when
  False, judged queries without results are skipped (trec_eval 9 without -c).
- `ignore_identical_ids`: a retrieved document whose id equals the query id is dropped before
  scoring, as BEIR's and mteb's evaluator do for the tasks that set it (mteb's FiQA2018, ArguAna,
  Quora, ...): their query and corpus ids share one numbering, and such a document is the query itself.

The measures: a `Measure` is one named number per query, a `Family` parses and computes them.

Families are pluggable (ir_measures style): each module declares one family, `register()` adds
it, and `evaluate` hands every family the measures it parsed. Families that share a backend
(every pytrec_eval family) are computed in one pass.

A name is parsed as given first (trec_eval spellings are case-sensitive: `P.5,10`, `Rprec`),
then lower-cased with `@` read as `_at_` (`nDCG@10` -> `ndcg_at_10`). One spelling may name
several measures (`P.5,10`, `all_trec`): `parse_measures` expands them, `get_measure` refuses.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from ..base.errors import UsageError, choices

TIE_RULES: tuple[str, ...] = ("group-mean", "doc-id", "input-order")
DEFAULT_TIE_RULE = "group-mean"
# rcp-ndcg's and underscore spellings of the same rules.
TIE_RULE_ALIASES = {
    "group_mean": "group-mean",
    "doc_id": "doc-id",
    "doc_id_desc": "doc-id",
    "doc-id-desc": "doc-id",
    "input_order": "input-order",
}
SCORE_PRECISIONS: tuple[str, ...] = ("float32", "float64")
ScorePrecision = Literal["float32", "float64"]
REFERENCES = {"float32": "trec_eval 9.x / pytrec_eval", "float64": "trec_eval 10.x"}

DEFAULT_MEASURES: tuple[str, ...] = (
    "ndcg_at_1",
    "ndcg_at_3",
    "ndcg_at_5",
    "ndcg_at_10",
    "ndcg_at_20",
    "ndcg_at_100",
    "map",
    "map_at_10",
    "map_at_100",
    "recall_at_1",
    "recall_at_5",
    "recall_at_10",
    "recall_at_20",
    "recall_at_50",
    "recall_at_100",
    "p_at_1",
    "p_at_5",
    "p_at_10",
    "mrr_at_10",
)


def running_sum(values: Iterable[float]) -> float:
    """Values added one at a time in double, left to right, as trec_eval accumulates its `all` values.

    Python 3.12's `sum()` of floats is compensated (and `statistics.fmean` exact), so it can differ from
    trec_eval in the last printed digit (0.0088 where trec_eval prints 0.0087); every aggregate the
    project prints goes through here instead.
    """
    total = 0.0
    for value in values:
        total += value
    return total


def running_mean(values: Iterable[float]) -> float:
    """`running_sum(values) / len(values)` (trec_eval's mean); NaN for no values."""
    items = list(values)
    return running_sum(items) / len(items) if items else math.nan


def check_tie_rule(tie_rule: str) -> str:
    """The canonical tie rule for a spelling; UsageError listing the rules otherwise."""
    rule = TIE_RULE_ALIASES.get(str(tie_rule), tie_rule)
    if rule not in TIE_RULES:
        raise UsageError(f"unknown tie rule '{tie_rule}'", f"choose from {choices(TIE_RULES)}")
    return rule


def check_score_precision(precision: str) -> str:
    if precision not in SCORE_PRECISIONS:
        raise UsageError(
            f"unknown score precision '{precision}'",
            "choose float32 (trec_eval 9.x / pytrec_eval, the default) or float64 (trec_eval 10.x)",
        )
    return precision


def _int_option(value: Any, option: str, minimum: int, example: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UsageError(f"{option} {value!r} must be an integer >= {minimum}", f"use e.g. {example}")
    return value


@dataclass(frozen=True)
class ScoringProtocol:
    """How a run is scored; see the module docstring. Invalid values raise UsageError (one line)."""

    measures: tuple[str, ...] = DEFAULT_MEASURES
    tie_rule: str = DEFAULT_TIE_RULE
    score_precision: str = "float32"
    relevance_level: int = 1
    max_results: int | None = None
    judged_only: bool = False
    complete: bool = True
    ignore_identical_ids: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.measures, str):
            raise UsageError(f"measures {self.measures!r} must be a sequence of names", "e.g. ('ndcg_at_10', 'map')")
        object.__setattr__(self, "measures", tuple(parse_measures(list(self.measures))))
        object.__setattr__(self, "tie_rule", check_tie_rule(self.tie_rule))
        check_score_precision(self.score_precision)
        if self.relevance_level == 0 and not isinstance(self.relevance_level, bool):
            raise UsageError(
                "relevance level (-l) 0 is not supported: pytrec_eval, which computes most trec_eval measures "
                "here, needs a level >= 1",
                "use -l 1 (the default) or higher",
            )
        _int_option(self.relevance_level, "relevance level (-l)", 1, "-l 1")
        if self.max_results is not None:
            _int_option(self.max_results, "max results per query (-M)", 1, "-M 1000")
        for name in ("judged_only", "complete", "ignore_identical_ids"):
            if not isinstance(getattr(self, name), bool):
                raise UsageError(f"{name} {getattr(self, name)!r} must be true or false", f"set {name} to a boolean")

    @property
    def reference(self) -> str:
        """The tool whose ranking this protocol reproduces (`trec_eval 10.x` for float64)."""
        return REFERENCES[self.score_precision]

    def replace(self, **changes: Any) -> ScoringProtocol:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        unknown = sorted(set(changes) - set(values))
        if unknown:
            raise UsageError(f"unknown scoring protocol field '{unknown[0]}'", f"fields: {choices(values)}")
        values.update(changes)
        return ScoringProtocol(**values)

    def with_measures(self, measures: tuple[str, ...] | list[str]) -> ScoringProtocol:
        return self.replace(measures=tuple(measures))

    def rules(self) -> dict[str, Any]:
        """Everything but the measures: what must match for two sets of scores to be comparable."""
        data = self.as_dict()
        data.pop("measures")
        return data

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["measures"] = list(self.measures)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScoringProtocol:
        """Read `as_dict()` output back; missing fields take their defaults, unknown ones are refused."""
        if not isinstance(data, Mapping):
            raise UsageError(f"scoring protocol {data!r} is not a mapping", "expected the dict written by as_dict()")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UsageError(f"unknown scoring protocol field '{unknown[0]}'", f"fields: {choices(sorted(known))}")
        values = dict(data)
        if "measures" in values and not isinstance(values["measures"], str):
            values["measures"] = tuple(values["measures"])
        return cls(**values)

    @classmethod
    def from_options(
        cls, measures: Any = None, options: Mapping[str, Any] | None = None, **overrides: Any
    ) -> ScoringProtocol:
        """The protocol for the older `evaluate(qrels, run, measures, options={"tie_rule": ...})` call."""
        values: dict[str, Any] = {k: v for k, v in dict(options or {}).items() if k in {f.name for f in fields(cls)}}
        if measures is not None:
            values["measures"] = tuple(measures)
        values.update(overrides)
        return cls(**values)


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
    are printed by `trec_eval_lines` only; `evaluate` leaves them out. `higher_is_better` is False
    for counts and diagnostics that have no better side (num_rel, ideal_dcg, judged_at_k, unj):
    a report bolds no "best" value of those.
    """

    name: str
    trec_name: str
    compute: Callable[[list[Measure], EvalData], PerQuery] = field(compare=False, repr=False)
    cutoff: int | None = None
    aggregate: str = "mean"
    integer: bool = False
    per_query_line: bool = True
    text: bool = False
    higher_is_better: bool = True

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
# The built-in families' modules, registered in this order on the first lookup (the order of the valid forms in
# error messages; trec_eval's spellings come last): importing `protocol` or `ranking` alone loads none of them,
# so a refusal that never names a measure never compiles them. `trec.names` is registered here, the others
# register themselves when imported.
BUILTIN_FAMILIES = (
    "trec.ours",
    "trec.judged",
    "published.ndcg_float",
    "published.diversity",
    "published.coverage",
    "published.p_mrr",
    "published.passage_in_context",
    "trec.names",
)
_builtins_loaded = False
_loading = False
_BUILTINS_LOCK = threading.RLock()  # reentrant: the modules' own register() calls come back here while loading


def families() -> list[Family]:
    """Every registered family, the built-in ones first (imported on the first call; another thread's first
    call waits until they all are)."""
    global _builtins_loaded, _loading
    if not _builtins_loaded:
        with _BUILTINS_LOCK:
            if not _builtins_loaded and not _loading:
                _loading = True
                try:
                    import importlib

                    for name in BUILTIN_FAMILIES:
                        module = importlib.import_module(f"{__package__}.{name}")
                        if name == "trec.names":
                            register(module.FAMILY)
                    _builtins_loaded = True
                finally:
                    _loading = False
    return FAMILIES


def register(family: Family) -> Family:
    """Add a family (after the built-in ones); later families may not reuse an existing family's name."""
    if any(existing.name == family.name for existing in families()):
        raise ValueError(f"measure family {family.name} is already registered")
    FAMILIES.append(family)
    _CACHE.clear()
    return family


def measure_forms() -> list[str]:
    return [form for family in families() for form in family.forms]


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
        for family in families():
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

"""The scoring protocol: every choice that changes a score, in one typed, recorded value.

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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from ..errors import UsageError, choices

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

    def __post_init__(self) -> None:
        from .base import parse_measures

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
        for name in ("judged_only", "complete"):
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

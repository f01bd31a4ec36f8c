"""The scoring protocol: which measures, and how scores, ties and judgments are read.

Two results are comparable only when their protocols are equal, so every result file records
one, and `--resume` keeps a result only when its protocol matches the request's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..errors import UsageError, choices

TIE_RULES = ("group-mean", "doc-id", "input_order")
SCORE_PRECISIONS = ("float32", "float64")

ScorePrecision = Literal["float32", "float64"]


@dataclass(frozen=True)
class ScoringProtocol:
    """How a run is scored.

    `score_precision`: float32 compares scores as trec_eval 9 / pytrec_eval do (the default), float64
    as trec_eval 10 does. `tie_rule` applies to float-gain measures only. `relevance_level` is the
    minimum grade a binary measure counts as relevant (trec_eval -l), `max_results` keeps only the
    first N results per query (-M), `judged_only` drops unjudged documents first (-J), `complete`
    scores judged queries without results as 0 (-c; on by default).
    """

    measures: tuple[str, ...] = ()
    tie_rule: str = "group-mean"
    score_precision: str = "float32"
    relevance_level: int = 1
    max_results: int | None = None
    judged_only: bool = False
    complete: bool = True

    def __post_init__(self) -> None:
        if self.tie_rule not in TIE_RULES:
            raise UsageError(f"unknown tie rule '{self.tie_rule}'", f"choose from {choices(TIE_RULES)}")
        if self.score_precision not in SCORE_PRECISIONS:
            raise UsageError(
                f"unknown score precision '{self.score_precision}'", f"choose from {choices(SCORE_PRECISIONS)}"
            )
        if self.relevance_level < 1:
            raise UsageError(f"relevance level {self.relevance_level} must be at least 1", "use e.g. -l 2")
        if self.max_results is not None and self.max_results < 1:
            raise UsageError(f"max results {self.max_results} must be at least 1", "use e.g. -M 1000")

    def with_measures(self, measures: tuple[str, ...] | list[str]) -> ScoringProtocol:
        return ScoringProtocol(
            tuple(measures),
            self.tie_rule,
            self.score_precision,
            self.relevance_level,
            self.max_results,
            self.judged_only,
            self.complete,
        )

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
    def from_dict(cls, data: dict[str, Any]) -> ScoringProtocol:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["measures"] = tuple(known.get("measures", ()))
        return cls(**known)

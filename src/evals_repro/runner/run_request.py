"""What a run is asked and what it answers: the request, each subset's outcome, the summary.

Its own module because everyone around the run loop reads these (the API, the CLI, `run --plan`,
`resume`) without needing the loop itself (`evaluation`), and the loop needs them too: one owner, no cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import EXIT_USAGE, DataError, EvalsError
from ..base.usage import Usage
from ..records.units import Setting

SETTINGS = tuple(s.value for s in Setting)
# Run options that change what a method returns (so a result computed with others does not cover a request).
RESULT_OPTIONS = (
    "rerank_top_k",
    "store_prefix",
    # openai:<model> and rerank-api: what changes the vectors or the scores (never where the servers run)
    "dimensions",
    "prefix_style",
    "query_prefix",
    "document_prefix",
    "rerank_endpoint",
    "rerank_max_tokens",
    "served_models",  # what the servers of openai:/rerank-api: report serving (providers.replicas.record_identity)
)


@dataclass
class RunRequest:
    method: str
    benchmark: str = "sample"
    subsets: list[str] | None = None
    setting: str = "monolingual"
    top_k: int = 100
    results_dir: Path = Path("results")
    cache_dir: Path = Path("cache")
    resume: bool = False
    content: str = "markdown"
    revision: str | None = None
    measures: list[str] | None = None
    language: str | None = None  # native language of a user BEIR folder
    tie_rule: str = "group-mean"  # ties in float-gain measures (RCP-nDCG)
    score_precision: str = "float32"  # float32: trec_eval 9 / pytrec_eval; float64: trec_eval 10
    rerank: str | None = None  # `--rerank NAME[:model]`, the same as `+NAME@depth` in the method
    rerank_depth: int | None = None  # None: the default depth (50) when a reranker is given
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class SubsetOutcome:
    subset: str
    path: Path
    status: str  # "written", "rescored", "skipped" or "failed"
    metrics: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    error: EvalsError | None = field(default=None, compare=False, repr=False)  # a failure's own error, if typed


@dataclass
class RunSummary:
    benchmark: str
    method: str
    outcomes: list[SubsetOutcome]
    usage: Usage

    @property
    def failures(self) -> list[SubsetOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    def refusal(self) -> EvalsError | None:
        """The one error to stop with when every subset failed on its data or options (see `all_refused`)."""
        return all_refused(self.failures, len(self.outcomes))


def all_refused(failures: list[SubsetOutcome], total: int) -> EvalsError | None:
    """The one error to stop with when every one of `total` subsets failed on its data or options (exit 2,
    nothing written, so no `--resume` advice): a single subset's own error, else one line pointing at the
    failures said as they happened (`say_failure`). None when something was done or a failure was of another
    kind (a provider, a bug). `run` and `run --plan` stop alike."""
    if not failures or len(failures) != total:
        return None
    if any(f.error is None or f.error.exit_code != EXIT_USAGE for f in failures):
        return None
    if len(failures) == 1:
        return failures[0].error
    reasons = len({f.reason for f in failures})
    return DataError(
        f"all {len(failures)} subsets failed on their data or options "
        + ("(the same reason, above)" if reasons == 1 else "(each reason above)"),
        "fix what " + ("it names" if reasons == 1 else "each names") + ", then run the command again",
    )


def say_failure(
    outcomes: list[SubsetOutcome],
    failure: SubsetOutcome,
    several: bool,
    say: Callable[[str], None],
) -> None:
    """Say a subset failed, as it happens, and add it to `outcomes`: the reason once (a repeated one points at
    its first subset); a single subset refused on its data says it only in the final error line."""
    first = next((o.subset for o in outcomes if o.status == "failed" and o.reason == failure.reason), None)
    if several or failure.error is None or failure.error.exit_code != EXIT_USAGE:
        say(
            f"{failure.subset}: failed: {failure.reason}"
            if first is None
            else f"{failure.subset}: failed: the same reason as {first}"
        )
    outcomes.append(failure)

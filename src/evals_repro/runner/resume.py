"""What one subset's run asks, and what `--resume` does with a result already there.

Shared by `run` (which keeps, re-scores or recomputes) and `run --plan` (which counts what that
would send), so both decide from the same comparison of the request with the existing record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.context import MethodContext
from ..base.data import Subset
from ..benchmarks.declaration import BenchmarkDeclaration
from ..methods.pipeline import PipelineSpec
from ..metrics.protocol import ScoringProtocol
from ..records.units import Action, Coverage, Setting, Verdict
from .pooling import measures_for
from .run_request import RESULT_OPTIONS, RunRequest
from .scoring import languages_for

if TYPE_CHECKING:
    from ..records.results import ResultRecord


def resume_verdict(existing: ResultRecord, coverage: Coverage, path: Path) -> Verdict:
    """What `--resume` does with an existing result (what `run` does and `run --plan` counts): keep it, re-score
    its saved run, or recompute it; a result whose saved run, judgments or gains are missing or not the files it
    records is recomputed, saying why."""
    from ..records.runs import saved_files_differ

    verdict = existing.covers(coverage)
    differs = None if verdict.action is Action.RERUN else saved_files_differ(path, existing)
    if differs is None:
        return verdict
    wrong, missing = differs
    return Verdict.rerun(
        f"its saved {wrong.name} is missing"
        if missing
        else f"its saved {wrong.name} is not the file {path.name} records: sha256 differs"
    )


def subset_coverage(
    request: RunRequest,
    decl: BenchmarkDeclaration,
    subset: Subset,
    spec: PipelineSpec,
    ctx: MethodContext,
    protocol: ScoringProtocol,
    existing: ResultRecord | None,
    path: Path,
    say: Callable[[str], None],
) -> tuple[RunRequest, list[str], ScoringProtocol, Coverage, list[str]]:
    """What this subset's run asks (`--resume` compares it with the existing result): the request (a
    crosslingual result keeps its setting), the query languages, the protocol to score with, the coverage, and
    the measures kept from the existing result beyond those asked."""
    name = subset.name
    if (
        existing is not None
        and existing.setting is Setting.CROSSLINGUAL
        and request.setting != Setting.CROSSLINGUAL.value
    ):
        # A crosslingual result holds the monolingual scores too; a monolingual run must not replace it with less.
        say(f"{name}: {path.name} holds a crosslingual result (its monolingual scores included): kept crosslingual")
        request = replace(request, setting=Setting.CROSSLINGUAL.value)
    languages = languages_for(request.setting, decl, subset)
    protocol = declared_protocol(decl, name, protocol)
    # A result never loses a measure it had: the existing record's measures join the requested ones.
    wanted = measures_for(subset, list(protocol.measures))
    kept = [m for m in existing.scoring.measures if m not in wanted] if existing is not None else []
    wanted += kept
    digests = subset.digests()
    coverage = Coverage(
        setting=Setting(request.setting),
        pipeline=spec.as_dict(),
        options={k: ctx.options[k] for k in RESULT_OPTIONS if k in ctx.options},
        top_k=request.top_k,
        revision=request.revision,
        data_digest=str(digests["combined"]),
        protocol=protocol.with_measures(measures_for(subset, list(protocol.measures))),
    )
    return request, languages, protocol.with_measures(wanted), coverage, kept


def declared_protocol(decl: BenchmarkDeclaration, name: str, protocol: ScoringProtocol) -> ScoringProtocol:
    """The protocol with what a subset's declaration fixes: `relevance_level` (the minimum grade binary
    measures count, trec_eval -l; TREC DL passage judgments are read with 2, as the track and pyserini do)
    and `ignore_identical_ids` (mteb's flag of the task the subset reproduces, e.g. FiQA2018's)."""
    source = decl.subset_source(name)
    changes: dict[str, Any] = {}
    if source.get("relevance_level") is not None:
        changes["relevance_level"] = int(source["relevance_level"])
    if source.get("ignore_identical_ids") is not None:
        changes["ignore_identical_ids"] = source["ignore_identical_ids"]
    return protocol.replace(**changes) if changes else protocol

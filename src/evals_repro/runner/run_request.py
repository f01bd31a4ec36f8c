"""What a run is asked and what it answers: the request, each subset's outcome, the summary.

Its own module because everyone around the run loop reads these (the API, the CLI, `run --plan`,
`resume`) without needing the loop itself (`evaluation`), and the loop needs them too: one owner, no cycle.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import (
    EXIT_COMPONENT,
    EXIT_PROVIDER,
    EXIT_SUBSETS_FAILED,
    EXIT_UNEXPECTED,
    EXIT_USAGE,
    EvalsError,
    SubsetsFailed,
)
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


# What `RunRequest.options` may hold: the `run` command's provider and method options, each its flag with
# underscores (`--voyage-tpm` -> voyage_tpm). The Python API refuses any other keyword (tests/test_python_objects.py
# holds this list to the command's flags).
RUN_OPTIONS = (
    "workers",
    "timeout",
    "max_attempts",
    "rerank_top_k",
    "store_prefix",
    *(
        f"{provider}_{kind}"
        for provider in ("voyage", "cohere", "gemini", "mixedbread")
        for kind in ("tpm", "rpm", "interval")
    ),
    "index_ram",
    "base_url",
    "dimensions",
    "prefix_style",
    "query_prefix",
    "document_prefix",
    "batch_size",
    "openai_tpm",
    "openai_rpm",
    "openai_interval",
    "rerank_base_url",
    "rerank_endpoint",
    "rerank_max_tokens",
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

    def error(self) -> EvalsError | None:
        """The error the run ends with, None when no subset failed (see `failed_run`)."""
        return failed_run(self.failures, len(self.outcomes))


def exit_code_of(failure: SubsetOutcome) -> int:
    """A failed subset's class: its error's exit code; an untyped exception is a bug (exit 1)."""
    return failure.error.exit_code if failure.error is not None else EXIT_UNEXPECTED


# A run whose every subset failed, on failures of different classes, exits with the first class present here:
# a bug outranks the rest, and exit 3 (a provider: trying again later may help) is promised only when every
# failure was a provider's.
PRECEDENCE = (EXIT_UNEXPECTED, EXIT_COMPONENT, EXIT_USAGE, EXIT_PROVIDER)
CLASSES = {
    EXIT_UNEXPECTED: "on an unexpected error",
    EXIT_COMPONENT: "in your component",
    EXIT_USAGE: "on their data or options",
    EXIT_PROVIDER: "at the provider",
}
LAST_LINE = 200  # characters of the run's last line, `error: ` included
MIN_SHARED = 20  # characters of a reason worth showing (and of an opening reasons share, to say it once)
BUG_HINT = "an unexpected error: please report it with its traceback (--verbose shows it)"


def failed_run(failures: list[SubsetOutcome], total: int) -> EvalsError | None:
    """The error a run of `total` subsets ends with; None when none failed.

    One subset asked: its own error (an untyped exception as a bug, exit 1). Several: one line of at most
    LAST_LINE characters naming each distinct reason once with the subsets it hit (every reason was said in full
    as it happened, `say_failure`), exit 4 when other subsets are done, else the failures' own class."""
    if not failures:
        return None
    if total == 1:
        only = failures[0]
        return only.error or SubsetsFailed(f"{only.subset}: {only.reason}", BUG_HINT, EXIT_UNEXPECTED)
    codes = {exit_code_of(f) for f in failures}
    everything = len(failures) == total
    if everything:
        code = min(codes, key=lambda c: PRECEDENCE.index(c) if c in PRECEDENCE else len(PRECEDENCE))
    else:
        code = EXIT_SUBSETS_FAILED
    groups: dict[str, list[SubsetOutcome]] = {}
    for failure in failures:
        groups.setdefault(failure.reason, []).append(failure)
    if everything:
        head = f"all {total} subsets failed" + (f" {CLASSES[code]}" if len(codes) == 1 and code in CLASSES else "")
        hint = "fix {}, then run the command again"
    else:
        head = f"{len(failures)} of {total} subsets failed"
        hint = "fix {}, then rerun with --resume (it runs only those)"
    messages = [g[0].error.message if g[0].error is not None else reason for reason, g in groups.items()]
    room = LAST_LINE - len("error: ") - len(": ") - len(hint.format("each"))
    text, reasons = _fitted(head, messages, [[f.subset for f in g] for g in groups.values()], not everything, room)
    return SubsetsFailed(text, hint.format("each" if reasons > 1 else "it"), code)


def _fitted(head: str, messages: list[str], subsets: list[list[str]], named: bool, room: int) -> tuple[str, int]:
    """`head: reason (subsets)`, each reason once, in at most `room` characters. When it does not fit as it is,
    the details of who failed are elided (a plugin's origin, a subset's folder), a reason each subset says of
    itself is said once, an opening the reasons share is said once (who failed; or the whole failure, when
    they differ only in a detail such as the query); then reasons are cut, lists of subsets shortened, and
    reasons past the first left to the lines above (where each was said in full). Also: how many reasons it
    tells apart."""
    lead = ""
    text = _line(head, lead, messages, subsets, named, len(max(messages, key=len)), max(map(len, subsets)), 99)
    if len(text) <= room:
        return text, len(messages)
    messages = [_elide_origin(message) for message in messages]
    who = messages[0].partition(": ")[0] + ": "
    what = {message.partition(": ")[2] for message in messages}
    if len(messages) > 1 and len(what) == 1 and "" not in what:  # one reason, each naming its own subset
        messages, subsets = [what.pop()], [[name for group in subsets for name in group]]
    elif len(messages) > 1 and len(who) > 2 and all(m.startswith(who) for m in messages):
        shared = os.path.commonprefix(messages)[len(who) :]
        shared = shared[: shared.rfind(" ")].rstrip(" :,(") if " " in shared else ""
        if len(shared) >= MIN_SHARED:  # one failure, differing in a detail (the query)
            messages, subsets = [f"{who}{shared} …"], [[name for group in subsets for name in group]]
        else:
            lead, messages = who, [m[len(who) :] for m in messages]
    longest = len(max(messages, key=len))
    for reasons in range(len(messages), 0, -1):  # every reason if it can be, each as long as it can be
        for names in range(max(map(len, subsets)), 0, -1):
            low, high = MIN_SHARED, max(longest, MIN_SHARED)  # the widest cut that fits (the length grows with it)
            if len(_line(head, lead, messages, subsets, named, low, names, reasons)) > room:
                continue
            while low < high:
                middle = (low + high + 1) // 2
                if len(_line(head, lead, messages, subsets, named, middle, names, reasons)) <= room:
                    low = middle
                else:
                    high = middle - 1
            return _line(head, lead, messages, subsets, named, low, names, reasons), len(messages)
    return _line(head, lead, messages, subsets, named, MIN_SHARED, 1, 1)[: room - 1] + "…", len(messages)


_PARENTHESES = re.compile(r"\([^()]{12,}\)")


def _elide_origin(message: str) -> str:
    """`method 'x' (acme-search 1.3.0, acme.evals:X): what` -> `method 'x' (…): what`: the details of who
    failed (before the first colon), said in full on the lines above."""
    who, colon, what = message.partition(": ")
    return _PARENTHESES.sub("(…)", who) + colon + what if colon else message


def _line(
    head: str,
    lead: str,
    messages: list[str],
    subsets: list[list[str]],
    named: bool,
    width: int,
    names: int,
    reasons: int,
) -> str:
    def listed(group: list[str]) -> str:
        return ", ".join(group[:names]) + (f" +{len(group) - names} more" if len(group) > names else "")

    def cut(text: str) -> str:
        text = text.rstrip(".")
        return text if len(text) <= width else text[: width - 1].rstrip() + "…"

    if len(messages) == 1:
        return f"{head}{f' ({listed(subsets[0])})' if named else ''}: {cut(messages[0])}"
    parts = [f"{cut(m)} ({listed(g)})" for m, g in zip(messages[:reasons], subsets[:reasons])]
    more = f"; +{len(messages) - reasons} more (above)" if reasons < len(messages) else ""
    return f"{head}: {lead}" + "; ".join(parts) + more


def all_refused(failures: list[SubsetOutcome], total: int) -> EvalsError | None:
    """The one error to stop with when every one of `total` subsets failed on its data or options (exit 2,
    nothing written, so no `--resume` advice); None when something was done or a failure was of another kind
    (a provider, a bug). `run` and `run --plan` stop alike."""
    if not failures or len(failures) != total:
        return None
    if any(exit_code_of(f) != EXIT_USAGE for f in failures):
        return None
    return failed_run(failures, total)


def say_failure(
    outcomes: list[SubsetOutcome],
    failure: SubsetOutcome,
    several: bool,
    say: Callable[[str], None],
) -> None:
    """Say a subset failed, as it happens, and add it to `outcomes`: the reason once (a repeated one points at
    its first subset). A run of one subset says it only in its last line (`failed_run`)."""
    first = next((o.subset for o in outcomes if o.status == "failed" and o.reason == failure.reason), None)
    if several:
        say(
            f"{failure.subset}: failed: {failure.reason}"
            if first is None
            else f"{failure.subset}: failed: the same reason as {first}"
        )
    outcomes.append(failure)

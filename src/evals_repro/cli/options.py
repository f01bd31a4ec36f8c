"""What every command's options share: the fixed choices (shown in `--help`), list parsing, exit codes.

The choices mirror the library's own tuples (`run_request.SETTINGS`, `metrics.protocol.TIE_RULES`,
`breakdown.FIELDS`, ...); tests/test_cli_surface.py keeps them equal. They are spelled out here, not
imported, so that `--help` imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum, StrEnum
from typing import Any

from ..providers.settings import DEFAULT_MAX_ATTEMPTS, DEFAULT_TIMEOUT, DEFAULTS


class Setting(StrEnum):
    """Which query languages a run scores."""

    monolingual = "monolingual"
    crosslingual = "crosslingual"


class Content(StrEnum):
    """What a page is for the method: its Markdown/OCR text or its page image."""

    markdown = "markdown"
    images = "images"


class TieRule(StrEnum):
    """Tied scores in RCP-nDCG (float gains)."""

    group_mean = "group-mean"
    doc_id = "doc-id"
    input_order = "input-order"


class ScorePrecision(StrEnum):
    """How scores are compared: trec_eval 9.x / pytrec_eval (float32) or trec_eval 10.x (float64)."""

    float32 = "float32"
    float64 = "float64"


class BreakdownField(StrEnum):
    """Query metadata that `report --by` groups scores by."""

    query_type = "query_type"
    query_format = "query_format"
    content_type = "content_type"
    relevant_pages = "relevant_pages"


class AnswerContext(StrEnum):
    """How `answer` shows context pages to the generator."""

    text = "text"
    images = "images"
    hybrid = "hybrid"


class Parsing(StrEnum):
    """Mixedbread's parsing strategy for uploaded pages."""

    fast = "fast"
    high_quality = "high_quality"


class BoxConventionChoice(StrEnum):
    """How `grounding predict` asks for and reads boxes (vidore_paper/conventions.py); auto = by model name."""

    auto = "auto"
    gemini = "gemini"
    qwen3_vl = "qwen3-vl"
    qwen2_vl = "qwen2-vl"
    qwen2_5_vl = "qwen2.5-vl"
    xyxy = "xyxy"


def value_of(choice: Enum | str) -> str:
    """The library's string for a choice (typer hands commands the Enum member)."""
    return str(choice.value) if isinstance(choice, Enum) else str(choice)


def split_list(values: Iterable[str] | None, option: str = "") -> list[str] | None:
    """A list option given repeated and/or comma-separated (`-s a -s b`, `-s a,b`): the names in order,
    duplicates dropped; None when nothing was given (the command's default applies). An option given
    only empty values (`-s ''`) is refused: read as "nothing given", it would silently mean "all"."""
    if not values:
        return None
    names: list[str] = []
    for value in values:
        for name in value.split(","):
            name = name.strip()
            if name and name not in names:
                names.append(name)
    if not names:
        from ..base.errors import UsageError

        raise UsageError(
            f"{option or 'a list option'} was given no names (an empty value)",
            f"name at least one, or drop {option or 'the option'} for the default",
        )
    return names


LIST_HELP = "repeat the option or separate with commas"
# What --help shows as the default of a provider option left unset (the option stays None: "not given", and the
# library applies providers/settings.py's default).
TIMEOUT_DEFAULT = f"{DEFAULT_TIMEOUT:g}"
MAX_ATTEMPTS_DEFAULT = str(DEFAULT_MAX_ATTEMPTS)


def budget_default(provider: str, kind: str) -> str:
    """The default a provider budget option (`tpm`, `rpm`, `interval`) shows in --help; 0 = no budget."""
    if kind == "interval":
        return "none"
    value = DEFAULTS[provider][0 if kind == "tpm" else 1]
    return f"{value:,}" if value else "none"


def budget_option(provider: str, kind: str) -> Any:
    """`--<provider>-tpm|rpm|interval`: the provider's own budget, None when not given (the library's default)."""
    import typer

    label = provider.capitalize()
    helps = {
        "tpm": f"{label} tokens per minute.",
        "rpm": f"{label} requests per minute.",
        "interval": f"Seconds between {label} calls.",
    }
    return typer.Option(None, f"--{provider}-{kind}", show_default=budget_default(provider, kind), help=helps[kind])


# `report --decimals`: x100 scores are means of float32-compared values; past 6 decimals the digits are noise.
MAX_DECIMALS = 6

EXIT_CODES = {
    0: "success",
    1: "unexpected error (a bug: rerun with --verbose and report the traceback)",
    2: "usage, data or configuration error (bad option, unknown name, missing or garbled file, missing key, "
    "no Hub access, a full or read-only disk)",
    3: "provider error (a hosted API or a server refused the request, failed after retries, or answered wrong)",
    4: "some subsets of a run failed, the others are done (rerun with --resume; when none is done, the failures' "
    "own code)",
    5: "your component failed (a plugin's or Python object's retriever, embedder or reranker raised, or returned "
    "what its protocol does not allow)",
    130: "interrupted (finished subsets and records are kept; rerun with --resume)",
    143: "terminated by SIGTERM (handled as an interrupt)",
}
EPILOG = "Exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items()) + "."


SEED_DEFAULT = 42  # significance.DEFAULT_SEED, spelled out: importing it loads numpy


def seed_option(draws: str) -> Any:
    """`--seed` of a report's bootstrap and randomization draws (`draws` says which): same seed, same numbers."""
    import typer

    return typer.Option(SEED_DEFAULT, "--seed", help=f"Seed of {draws} (the same seed, the same numbers).")

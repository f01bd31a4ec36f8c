"""Typed errors: every failure a user can cause carries one line and a hint on how to fix it.

The CLI prints `error: <message> (<hint>)` and exits non-zero; `--verbose` adds the traceback.
Exit codes (documented in the README and `evals-repro --help`): 0 success, 1 unexpected error,
2 usage/data/configuration error (a full disk included), 3 provider error, 4 some subsets of a multi-subset run
failed (the others are done), 5 a component of the user's own (a plugin or Python object) failed or broke its
protocol, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM, as schedulers send it). A run whose every subset
failed exits with its failures' own code (`runner.run_request.failed_run`).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2
EXIT_PROVIDER = 3
EXIT_SUBSETS_FAILED = 4
EXIT_COMPONENT = 5
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM


class EvalsError(Exception):
    """Base class for errors shown to the user as a single line."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = self.message.rstrip(".")
        return f"{text}: {self.hint}" if self.hint else text


class UsageError(EvalsError):
    """A bad option value, unknown name or impossible combination."""


class DataError(EvalsError):
    """A missing, empty, garbled or inconsistent input file or dataset."""


class ProviderError(EvalsError):
    """A hosted API failed in a way retries cannot fix (bad key, 4xx, retries exhausted)."""

    exit_code = EXIT_PROVIDER


class ConfigurationError(EvalsError):
    """A missing key or an unusable environment (no Hub access, store not uploaded)."""


class WriteError(EvalsError):
    """The disk refused a write (full, over quota, read-only, file too large): it fails every later write alike,
    so the command stops; what was being written was left as it was."""


class ComponentError(EvalsError):
    """A component of the user's own (a plugin's or Python object's retriever, embedder or reranker) raised, or
    handed back what its protocol does not allow (base/contracts.py): its code to fix, not a provider's or ours."""

    exit_code = EXIT_COMPONENT


class SubsetsFailed(EvalsError):
    """Subsets of a run failed (`runner.run_request.failed_run` words it): exit 4 when others are done, else
    the failures' own class."""

    def __init__(self, message: str, hint: str, exit_code: int) -> None:
        super().__init__(message, hint)
        self.exit_code = exit_code


def choices(values) -> str:
    """Format valid choices for a hint: `a, b, c`."""
    return ", ".join(str(v) for v in values)

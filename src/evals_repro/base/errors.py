"""Typed errors: every failure a user can cause carries one line and a hint on how to fix it.

The CLI prints `error: <message> (<hint>)` and exits non-zero; `--verbose` adds the traceback.
Exit codes (documented in the README and `evals-repro --help`): 0 success, 1 unexpected error,
2 usage/data/configuration error (a full disk included), 3 provider error, 4 some subsets of a run failed,
130 interrupted (Ctrl-C), 143 terminated (SIGTERM, as schedulers send it).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2
EXIT_PROVIDER = 3
EXIT_SUBSETS_FAILED = 4
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


class SubsetsFailed(EvalsError):
    """Some subsets of a run failed; the others' results were written. Each failure is listed."""

    exit_code = EXIT_SUBSETS_FAILED

    def __init__(self, failures) -> None:
        listed = "; ".join(f"{f.subset}: {f.reason}" for f in failures)
        super().__init__(
            f"{len(failures)} subset(s) failed ({listed})",
            "fix what each names, then rerun with --resume to run only those",
        )


def choices(values) -> str:
    """Format valid choices for a hint: `a, b, c`."""
    return ", ".join(str(v) for v in values)

"""The typer application every subcommand module registers on, and the console logging it sets up.

Kept apart from the package so that subcommand modules import it without importing the package that
imports them (no import cycle): `from .application import app`.
"""

from __future__ import annotations

import logging
import sys
from typing import Optional

import typer

from .options import EPILOG

app = typer.Typer(
    name="evals-repro",
    help="Reproduce retrieval and reranking scores on pinned public benchmarks.",
    epilog=EPILOG,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

VERBOSE = {"on": False}


def given_options(**values) -> dict:
    """The provider/method options the user actually set (None = keep the library default)."""
    return {key: value for key, value in values.items() if value is not None}


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("evals-repro")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown (not installed)"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"evals-repro {package_version()}")
        raise typer.Exit()


class ConsoleLogHandler(logging.Handler):
    """Library log records (INFO and up) on the rich console (stderr, between progress bars), as the user
    saw them before logging: the message itself, `warning: `/`error: ` in front of those levels; keys redacted."""

    PREFIX = {logging.WARNING: "warning: ", logging.ERROR: "error: ", logging.CRITICAL: "error: "}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from ..base.progress import console
            from ..providers.keys import redact

            text = self.PREFIX.get(record.levelno, "") + record.getMessage()
            console.print(redact(text), markup=False, highlight=False, soft_wrap=True)
        except Exception:
            self.handleError(record)


def configure_logging() -> None:
    """Show the library's records on the console, once per process (main() may run many times in tests)."""
    logger = logging.getLogger("evals_repro")
    if not any(isinstance(h, ConsoleLogHandler) for h in logger.handlers):
        handler = ConsoleLogHandler(level=logging.INFO)
        logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show tracebacks on errors, and debug messages."),
    version: Optional[bool] = typer.Option(
        None, "--version", callback=_print_version, is_eager=True, help="Print the package version and exit."
    ),
) -> None:
    VERBOSE["on"] = verbose
    configure_logging()
    if verbose:
        _verbose_logging()


def _verbose_logging() -> None:
    """`--verbose`: evals_repro's debug log (e.g. the traceback of a failed subset) on stderr, keys redacted.

    Only the `evals_repro` loggers: the SDKs' own debug logs (request options, headers) stay off. INFO and
    up are the console handler's already, so this one takes the debug records only."""
    from ..providers.keys import redact, scrub_exception

    class Redacting(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            if record.exc_info and record.exc_info[1] is not None:
                scrub_exception(record.exc_info[1])
            return redact(super().format(record))

    logger = logging.getLogger("evals_repro")
    if not any(getattr(h, "evals_repro_verbose", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(Redacting("%(levelname)s %(name)s: %(message)s"))
        handler.addFilter(lambda record: record.levelno < logging.INFO)
        handler.evals_repro_verbose = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)


def end_verbose_logging() -> None:
    logger = logging.getLogger("evals_repro")
    for handler in [h for h in logger.handlers if getattr(h, "evals_repro_verbose", False)]:
        logger.removeHandler(handler)
    logger.setLevel(logging.INFO)

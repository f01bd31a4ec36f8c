"""The `evals-repro` command: thin typer wrappers around library functions.

Every subcommand module registers itself on `app`; nothing heavy is imported at start-up. The library
reports progress through `logging` (logger `evals_repro`); the CLI shows those records on the console
(stderr), a message per line, warnings prefixed `warning:`.
"""

from __future__ import annotations

import logging
import sys
from typing import Optional

import typer

from ..errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_UNEXPECTED, EXIT_USAGE, EvalsError
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


GROUPS = ("rerank-study", "rcp", "grounding")  # commands with subcommands


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
    """Library log records on the rich console (stderr, between progress bars), as the user saw them
    before logging: the message itself, `warning: `/`error: ` in front of those levels."""

    PREFIX = {logging.WARNING: "warning: ", logging.ERROR: "error: ", logging.CRITICAL: "error: "}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from ..progress import console

            text = self.PREFIX.get(record.levelno, "debug: " if record.levelno < logging.INFO else "")
            console.print(text + record.getMessage(), markup=False, highlight=False, soft_wrap=True)
        except Exception:
            self.handleError(record)


def configure_logging(verbose: bool = False) -> None:
    """Show the library's records (INFO and up; DEBUG with --verbose) on the console, once per process."""
    logger = logging.getLogger("evals_repro")
    if not any(isinstance(h, ConsoleLogHandler) for h in logger.handlers):
        logger.addHandler(ConsoleLogHandler())
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show tracebacks on errors, and debug messages."),
    version: Optional[bool] = typer.Option(
        None, "--version", callback=_print_version, is_eager=True, help="Print the package version and exit."
    ),
) -> None:
    VERBOSE["on"] = verbose
    configure_logging(verbose)


from . import commands  # noqa: E402,F401  (registers the subcommands)


def main(argv: list[str] | None = None) -> int:
    """Entry point: one line per user error, a traceback only with --verbose."""
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in args or "-v" in args
    try:
        # standalone_mode=False: click returns a `typer.Exit(code)` as the value instead of exiting.
        returned = app(args=args, standalone_mode=False)
    except EvalsError as exc:
        if verbose:
            raise
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted: finished subsets are kept; rerun with --resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_OK if exc.code is None else EXIT_UNEXPECTED
    except Exception as exc:  # usage errors from typer's parser, and anything unexpected
        if type(exc).__name__ == "Abort":
            return EXIT_INTERRUPTED
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare command group: its help is the answer
            exc.show()  # type: ignore[attr-defined]
            return EXIT_USAGE
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):  # typer/click usage errors
            words = [a for a in args if not a.startswith("-")][:2]
            command = " ".join(words[:2] if words and words[0] in GROUPS else words[:1])
            print(
                # typer words a bad choice "Invalid value for '--x': Value error, 'y' is not one of ...".
                f"error: {exc.format_message().replace('Value error, ', '')} (see `evals-repro {command} --help`)".replace(
                    "  ", " "
                ),
                file=sys.stderr,
            )
            return int(exc.exit_code) or EXIT_USAGE
        if verbose:
            raise
        print(f"error: {type(exc).__name__}: {exc} (rerun with --verbose for the traceback)", file=sys.stderr)
        return EXIT_UNEXPECTED
    return returned if isinstance(returned, int) and not isinstance(returned, bool) else EXIT_OK

"""The `evals-repro` command: thin typer wrappers around library functions.

Every subcommand module registers itself on `app`; nothing heavy is imported at start-up. The library
reports progress through `logging` (logger `evals_repro`); the CLI shows those records on the console
(stderr), a message per line, warnings prefixed `warning:`, every API key redacted. `--verbose` adds the
debug records (with their tracebacks) and the traceback of a failure.
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
# Ctrl-C inside a command reaches main() as typer's exit code 130 (typer turns the KeyboardInterrupt into
# Exit(130), which standalone_mode=False returns); before or after it, as KeyboardInterrupt.
INTERRUPTED = "interrupted: finished subsets and records are kept; rerun the command to continue (`run` with --resume)"


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
    """Library log records (INFO and up) on the rich console (stderr, between progress bars), as the user
    saw them before logging: the message itself, `warning: `/`error: ` in front of those levels; keys redacted."""

    PREFIX = {logging.WARNING: "warning: ", logging.ERROR: "error: ", logging.CRITICAL: "error: "}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from ..progress import console
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


def _end_verbose_logging() -> None:
    logger = logging.getLogger("evals_repro")
    for handler in [h for h in logger.handlers if getattr(h, "evals_repro_verbose", False)]:
        logger.removeHandler(handler)
    logger.setLevel(logging.INFO)


from . import commands  # noqa: E402,F401  (registers the subcommands)


def command_tree():
    """`app` as the click command tree it runs as, with one change to its help: a flag (`--resume`, `--help`)
    shows no `<bool>` type, since it takes no value."""
    import typer.main

    root = typer.main.get_command(app)
    pending = [root]
    while pending:
        command = pending.pop()
        pending.extend(getattr(command, "commands", {}).values())
        help_option = command.get_help_option(typer.Context(command, **(command.context_settings or {})))
        for param in [*command.params, *([help_option] if help_option is not None else [])]:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
    return root


def _print_traceback(exc: BaseException) -> None:
    """`--verbose`: the traceback with its whole exception chain, every API key redacted."""
    from ..providers.keys import redacted_traceback

    print(redacted_traceback(exc), end="", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point: one line per user error, a traceback only with --verbose (never showing a key)."""
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in args or "-v" in args
    try:
        return _main(args, verbose)
    finally:
        if verbose:
            _end_verbose_logging()


def _main(args: list[str], verbose: bool) -> int:
    from ..providers.keys import redact

    try:
        # standalone_mode=False: click returns a `typer.Exit(code)` as the value instead of exiting.
        returned = command_tree()(args=args, standalone_mode=False)
    except EvalsError as exc:
        if verbose:
            _print_traceback(exc)
        print(f"error: {redact(exc.one_line())}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
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
            # typer words a bad choice "Invalid value for '--x': Value error, 'y' is not one of ...".
            # and lists choices of a missing argument on lines of their own: one line, whatever typer wrote.
            message = " ".join(exc.format_message().replace("Value error, ", "").split())
            print(f"error: {message} (see `evals-repro {command} --help`)".replace("  ", " "), file=sys.stderr)
            return int(exc.exit_code) or EXIT_USAGE
        if verbose:
            _print_traceback(exc)
            print(f"error: {redact(f'{type(exc).__name__}: {exc}')}", file=sys.stderr)
            return EXIT_UNEXPECTED
        print(
            f"error: {redact(f'{type(exc).__name__}: {exc}')} (rerun with --verbose for the traceback)",
            file=sys.stderr,
        )
        return EXIT_UNEXPECTED
    if returned == EXIT_INTERRUPTED:  # no command returns 130 itself: this is Ctrl-C
        print(INTERRUPTED, file=sys.stderr)
    return returned if isinstance(returned, int) and not isinstance(returned, bool) else EXIT_OK

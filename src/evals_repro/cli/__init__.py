"""The `evals-repro` command: thin typer wrappers around library functions.

Every subcommand module registers itself on `app`; nothing heavy is imported at start-up. The library
reports progress through `logging` (logger `evals_repro`); the CLI shows those records on the console
(stderr), a message per line, warnings prefixed `warning:`, every API key redacted. `--verbose` adds the
debug records (with their tracebacks) and the traceback of a failure.

Layer: interface. May import every layer; nothing imports it.
"""

from __future__ import annotations

import sys

from ..base.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, EXIT_UNEXPECTED, EXIT_USAGE, EvalsError
from . import commands  # noqa: F401  (registers the subcommands)
from .application import VERBOSE, app, configure_logging, end_verbose_logging, given_options, package_version

__all__ = ["VERBOSE", "app", "configure_logging", "given_options", "main", "package_version"]

# Ctrl-C inside a command reaches main() as typer's exit code 130 (typer turns the KeyboardInterrupt into
# Exit(130), which standalone_mode=False returns); before or after it, as KeyboardInterrupt.
INTERRUPTED = "interrupted: finished subsets and records are kept; rerun the command to continue (`run` with --resume)"
TERMINATED = (
    "terminated (SIGTERM): finished subsets and records are kept; rerun the command to continue (`run` with --resume)"
)
# SIGTERM (what schedulers and `kill` send) is handled as Ctrl-C is: it raises KeyboardInterrupt in the main
# thread, so every command stops the same way (workers drained, appended records flushed, results kept); this
# flag tells main() to say "terminated" and exit 143 instead of 130.
SIGNALLED = {"term": False}


GROUPS = ("rerank-study", "rcp", "grounding")  # commands with subcommands


def command_tree():
    """`app` as the click command tree it runs as, with one change to its help: a flag (`--resume`, `--help`)
    shows no `<bool>` type, since it takes no value; and typer's imports that start-up does not need left out
    (`startup`: option values converted without pydantic where typer's result is known, help rendered without
    rich's Markdown and tracebacks)."""
    import typer
    import typer.main

    from .startup import install, lean_help

    lean_help()

    root = typer.main.get_command(app)
    pending = [root]
    while pending:
        command = pending.pop()
        pending.extend(getattr(command, "commands", {}).values())
        help_option = command.get_help_option(typer.Context(command, **(command.context_settings or {})))
        for param in [*command.params, *([help_option] if help_option is not None else [])]:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
            install(param)
    return root


def _print_traceback(exc: BaseException) -> None:
    """`--verbose`: the traceback with its whole exception chain, every API key redacted."""
    from ..providers.keys import redacted_traceback

    print(redacted_traceback(exc), end="", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point: one line per user error, a traceback only with --verbose (never showing a key)."""
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in args or "-v" in args
    previous = _handle_sigterm()
    try:
        code = _main(args, verbose)
        if SIGNALLED["term"] and code == EXIT_INTERRUPTED:
            return EXIT_TERMINATED
        return code
    finally:
        SIGNALLED["term"] = False
        if previous is not None:
            import signal

            signal.signal(signal.SIGTERM, previous)
        if verbose:
            end_verbose_logging()


def _on_sigterm(signum, frame) -> None:
    if SIGNALLED["term"]:
        return  # already stopping: a second SIGTERM must not interrupt the clean-up
    SIGNALLED["term"] = True
    raise KeyboardInterrupt


def _handle_sigterm():
    """Install the SIGTERM handler for one command; returns the handler it replaced (None: not installed,
    e.g. main() called from a thread other than the main one)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    SIGNALLED["term"] = False
    return signal.signal(signal.SIGTERM, _on_sigterm)


def _unexpected(exc: BaseException, verbose: bool) -> int:
    from ..providers.keys import redact

    if verbose:
        _print_traceback(exc)
        print(f"error: {redact(f'{type(exc).__name__}: {exc}')}", file=sys.stderr)
        return EXIT_UNEXPECTED
    print(
        f"error: {redact(f'{type(exc).__name__}: {exc}')} (rerun with --verbose for the traceback)",
        file=sys.stderr,
    )
    return EXIT_UNEXPECTED


def _stopped() -> str:
    return TERMINATED if SIGNALLED["term"] else INTERRUPTED


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
        print(_stopped(), file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_OK if exc.code is None else EXIT_UNEXPECTED
    except OSError as exc:
        from pathlib import Path

        from ..base.io import DISK_REFUSALS, write_error

        if exc.errno not in DISK_REFUSALS:
            return _unexpected(exc, verbose)
        # a full or read-only disk under any command: one line naming the file (a usage/data error, exit 2)
        error = write_error(Path(exc.filename) if exc.filename else Path.cwd(), exc, None, None)
        if verbose:
            _print_traceback(exc)
        print(f"error: {redact(error.one_line())}", file=sys.stderr)
        return error.exit_code
    except Exception as exc:  # usage errors from typer's parser, and anything unexpected
        if type(exc).__name__ == "Abort":
            if SIGNALLED["term"]:
                print(TERMINATED, file=sys.stderr)
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
        return _unexpected(exc, verbose)
    if returned == EXIT_INTERRUPTED:  # no command returns 130 itself: this is Ctrl-C (or SIGTERM)
        print(_stopped(), file=sys.stderr)
    return returned if isinstance(returned, int) and not isinstance(returned, bool) else EXIT_OK

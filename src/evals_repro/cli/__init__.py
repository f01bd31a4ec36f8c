"""The `evals-repro` command: thin typer wrappers around library functions.

Every subcommand module registers itself on `app`; nothing heavy is imported at start-up.
"""

from __future__ import annotations

import sys

import typer

from ..errors import EvalsError

app = typer.Typer(
    name="evals-repro",
    help="Reproduce retrieval and reranking scores on pinned public benchmarks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

VERBOSE = {"on": False}


def given_options(**values) -> dict:
    """The provider/method options the user actually set (None = keep the library default)."""
    return {key: value for key, value in values.items() if value is not None}


GROUPS = ("rerank-study", "rcp", "grounding")  # commands with subcommands


@app.callback()
def _root(verbose: bool = typer.Option(False, "--verbose", "-v", help="Show tracebacks on errors.")) -> None:
    VERBOSE["on"] = verbose


from . import commands  # noqa: E402,F401  (registers the subcommands)


def main(argv: list[str] | None = None) -> int:
    """Entry point: one line per user error, a traceback only with --verbose."""
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in args or "-v" in args
    try:
        code = app(args=args, standalone_mode=False)
    except EvalsError as exc:
        if verbose:
            raise
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted: finished subsets are kept; rerun with --resume", file=sys.stderr)
        return 130
    except SystemExit as exc:
        return int(exc.code or 0)
    except Exception as exc:  # usage errors from typer's parser, and anything unexpected
        if type(exc).__name__ == "Abort":
            return 130
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):  # typer/click usage errors
            words = [a for a in args if not a.startswith("-")][:2]
            command = " ".join(words[:2] if words and words[0] in GROUPS else words[:1])
            print(
                f"error: {exc.format_message()} (see `evals-repro {command} --help`)".replace("  ", " "),
                file=sys.stderr,
            )
            return int(exc.exit_code) or 2
        if verbose:
            raise
        print(f"error: {type(exc).__name__}: {exc} (rerun with --verbose for the traceback)", file=sys.stderr)
        return 1
    # Outside standalone mode click returns a `typer.Exit(n)`'s code instead of exiting.
    return code if isinstance(code, int) else 0

"""`evals-repro benchmarks` and `evals-repro methods`: what can be run."""

from __future__ import annotations

import typer

from . import app


@app.command("benchmarks")
def benchmarks_command() -> None:
    """List the declared benchmarks with their subsets and query languages."""
    from ..benchmarks import list_benchmarks

    for decl in list_benchmarks():
        typer.echo(f"{decl.name}  [{decl.loader}]  {decl.description}")
        typer.echo(f"  query languages: {', '.join(decl.query_languages)}")
        for subset in decl.subsets:
            typer.echo(f"  - {subset.name} (native: {subset.native_language})")


@app.command("methods")
def methods_command() -> None:
    """List the registered methods and rerankers."""
    from ..methods import METHODS, RERANKERS

    for name, entry in sorted(METHODS.items()):
        key = f"  key: {entry.key_env}" if entry.key_env else ""
        typer.echo(f"{name:32s} {entry.description} (content: {', '.join(entry.contents)}){key}")
    for name, entry in sorted(RERANKERS.items()):
        typer.echo(f"+{name:31s} {entry.description}")

"""`evals-repro benchmarks` and `evals-repro methods`: what can be run."""

from __future__ import annotations

import typer

from .application import app

DEFAULT_BENCHMARK = "vidore-v3"  # what `run` and `report` take without --benchmark


@app.command("benchmarks")
def benchmarks_command() -> None:
    """List the declared benchmarks with their subsets and query languages."""
    from ..benchmarks import list_benchmarks

    # By name: the files' order put vidore-v3 (`vidore-v3.toml`) after vidore-v3-rcp-retrieval.
    for decl in sorted(list_benchmarks(), key=lambda d: d.name):
        default = "  (default)" if decl.name == DEFAULT_BENCHMARK else ""
        typer.echo(f"{decl.name}{default}  [{decl.loader}]  {decl.description}")
        typer.echo(f"  query languages: {', '.join(decl.query_languages)}")
        for subset in decl.subsets:
            typer.echo(f"  - {subset.name} (native: {subset.native_language})")


@app.command("methods")
def methods_command() -> None:
    """List the registered methods and rerankers."""
    from ..pipeline import first_stage_entry, first_stage_names
    from ..registry import RERANKERS

    for name in first_stage_names():
        entry = first_stage_entry(name)
        assert entry is not None
        key = f"  key: {entry.key_env}" if entry.key_env else ""
        typer.echo(f"{name:32s} {entry.description} (content: {', '.join(entry.contents)}){key}")
    for entry in RERANKERS.entries():
        key = f"  key: {entry.key_env}" if entry.key_env else ""
        typer.echo(f"+{entry.name:31s} {entry.description}{key}")
    typer.echo("rrf:<a>+<b>[+...]                reciprocal rank fusion (k = 60) of first stages")
    typer.echo("<first stage>+<reranker>[:model]@<depth>   a reranker over any first stage (depth 50 by default)")

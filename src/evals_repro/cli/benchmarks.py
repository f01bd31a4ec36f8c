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
        plugin = decl.extra.get("plugin")
        owner = f"  plugin [{plugin['distribution']} {plugin['version']}]" if plugin else ""
        typer.echo(f"{decl.name}{default}  [{decl.loader}]{owner}  {decl.description}")
        typer.echo(f"  query languages: {', '.join(decl.query_languages)}")
        for subset in decl.subsets:
            typer.echo(f"  - {subset.name} (native: {subset.native_language})")
    from ..base.registry import LOADERS

    for entry in LOADERS.entries():
        if entry.plugin is not None:
            typer.echo(f"loader {entry.name}  plugin [{entry.plugin.distribution} {entry.plugin.version}]")


@app.command("methods")
def methods_command() -> None:
    """List the registered methods and rerankers (plugins with their distribution and version)."""
    from ..base.registry import RERANKERS, Entry
    from ..methods.pipeline import first_stage_entry, first_stage_names

    def description(entry: Entry) -> str:
        if entry.plugin is None:
            return entry.description
        from ..methods.plugins import describe_plugin

        return f"plugin {entry.kind} " + describe_plugin(entry)[0]

    def contents(entry: Entry) -> str:
        if entry.plugin is None:
            return ", ".join(entry.contents)
        from ..methods.plugins import accepted_contents

        accepted = accepted_contents(entry)
        return (
            "markdown; images if the built embedder's supports_images is true"
            if accepted is None
            else ", ".join(accepted)
        )

    for name in first_stage_names():
        entry = first_stage_entry(name)
        assert entry is not None
        key = f"  key: {entry.key_env}" if entry.key_env else ""
        typer.echo(f"{name:32s} {description(entry)} (content: {contents(entry)}){key}")
    for entry in RERANKERS.entries():
        key = f"  key: {entry.key_env}" if entry.key_env else ""
        typer.echo(f"+{entry.name:31s} {description(entry)}{key}")
    typer.echo("rrf:<a>+<b>[+...]                reciprocal rank fusion (k = 60) of first stages")
    typer.echo("<first stage>+<reranker>[:model]@<depth>   a reranker over any first stage (depth 50 by default)")

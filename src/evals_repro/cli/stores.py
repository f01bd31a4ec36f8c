"""`evals-repro mixedbread-upload markdown|images`: fill one Mixedbread store per subset, resumably."""

from __future__ import annotations

from typing import Optional

import typer

from . import app
from .options import LIST_HELP, Content, Parsing, split_list, value_of


@app.command("mixedbread-upload")
def mixedbread_upload_command(
    content: Content = typer.Argument(..., help="What to upload per page: its Markdown text or its image."),
    benchmark: str = typer.Option(..., "--benchmark", "-b", help="Declared benchmark name or BEIR folder."),
    subsets: Optional[list[str]] = typer.Option(
        None, "--subsets", "-s", help=f"Subsets to upload (default: all); {LIST_HELP}."
    ),
    parsing: Parsing = typer.Option(Parsing.fast, "--parsing", help="Mixedbread's parsing strategy."),
    workers: int = typer.Option(4, "--workers", help="Pages uploaded in parallel."),
    store_prefix: str = typer.Option("", "--store-prefix", help="Store name prefix (default: <benchmark>-eval)."),
) -> None:
    """Upload pages with their ids as external ids; a rerun skips pages already in the store."""
    from ..errors import ProviderError
    from ..stores.upload import upload_benchmark

    summaries = upload_benchmark(
        benchmark,
        value_of(content),
        split_list(subsets),
        parsing=value_of(parsing),
        workers=workers,
        store_prefix=store_prefix or None,
    )
    failed = 0
    for summary in summaries:
        typer.echo(summary.line())
        for page_id, reason in list(summary.failed.items())[:10]:
            typer.echo(f"  failed {page_id}: {reason}")
        if len(summary.failed) > 10:
            typer.echo(f"  ... and {len(summary.failed) - 10} more")
        failed += len(summary.failed)
    if failed:
        raise ProviderError(f"{failed} pages failed to upload", "rerun the same command to retry only those pages")

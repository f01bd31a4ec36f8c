"""`evals-repro mixedbread-upload markdown|images`: fill one Mixedbread store per subset, resumably."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .application import app
from .costs import Money
from .groups import GROUP, ApiCalls, grouped
from .options import LIST_HELP, Content, Parsing, split_list, value_of


@app.command("mixedbread-upload")
@grouped
def mixedbread_upload_command(
    content: Content = typer.Argument(..., help="What to upload per page: its Markdown text or its image."),
    benchmark: str = typer.Option(..., "--benchmark", "-b", help="Declared benchmark name or BEIR folder."),
    subsets: Optional[list[str]] = typer.Option(
        None, "--subsets", "-s", help=f"Subsets to upload (default: all); {LIST_HELP}."
    ),
    parsing: Parsing = typer.Option(Parsing.fast, "--parsing", help="Mixedbread's parsing strategy."),
    workers: int = typer.Option(4, "--workers", min=1, help="Pages uploaded in parallel (at least 1)."),
    store_prefix: str = typer.Option("", "--store-prefix", help="Store name prefix (default: <benchmark>-eval)."),
    cache_dir: Path = typer.Option(
        Path("cache"), "--cache-dir", help="Keeps the upload journal (uploads a killed run left unattached)."
    ),
    calls: ApiCalls = GROUP,
    money: Money = GROUP,
) -> None:
    """Upload pages with their ids as external ids; a rerun skips pages already in the store."""
    from ..base.errors import ProviderError
    from ..base.io import ensure_directory
    from ..base.usage import Usage
    from ..planning.upload import plan_upload
    from ..providers.prices import spend_text
    from ..stores.upload import upload_benchmark

    options = calls.given()
    chosen = split_list(subsets, "--subsets")
    table = money.gate(
        lambda: plan_upload(
            benchmark,
            value_of(content),
            chosen,
            parsing=value_of(parsing),
            store_prefix=store_prefix or None,
            options=options,
            cache_dir=cache_dir,
        )
    )
    if table is None:
        return
    ensure_directory(cache_dir, "--cache-dir")
    usage = Usage()
    summaries = money.within(
        lambda: upload_benchmark(
            benchmark,
            value_of(content),
            chosen,
            parsing=value_of(parsing),
            workers=workers,
            store_prefix=store_prefix or None,
            options=options,
            usage=usage,
            cache_dir=cache_dir,
        ),
        table,
    )
    failed = 0
    for summary in summaries:
        typer.echo(summary.line())
        for page_id, reason in list(summary.failed.items())[:10]:
            typer.echo(f"  failed {page_id}: {reason}")
        if len(summary.failed) > 10:
            typer.echo(f"  ... and {len(summary.failed) - 10} more")
        failed += len(summary.failed)
    typer.echo(f"spent: {spend_text(usage.summary(), usage.billed())}")
    if failed:
        raise ProviderError(f"{failed} pages failed to upload", "rerun the same command to retry only those pages")

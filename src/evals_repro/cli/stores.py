"""`evals-repro mixedbread-upload markdown|images`: fill one Mixedbread store per subset, resumably."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .application import app
from .costs import MAX_COST, PLAN, PRICES, cost_gate, with_ceiling
from .options import LIST_HELP, MAX_ATTEMPTS_DEFAULT, TIMEOUT_DEFAULT, Content, Parsing, split_list, value_of


@app.command("mixedbread-upload")
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
    timeout: Optional[float] = typer.Option(None, show_default=TIMEOUT_DEFAULT, help="API request timeout in seconds."),
    max_attempts: Optional[int] = typer.Option(
        None, "--max-attempts", show_default=MAX_ATTEMPTS_DEFAULT, help="Attempts per API request."
    ),
    plan: bool = PLAN,
    max_cost: Optional[float] = MAX_COST,
    prices: Optional[Path] = PRICES,
) -> None:
    """Upload pages with their ids as external ids; a rerun skips pages already in the store."""
    from ..base.errors import ProviderError
    from ..base.io import ensure_directory
    from ..base.usage import Usage
    from ..planning.upload import plan_upload
    from ..providers.prices import spend_text
    from ..stores.upload import upload_benchmark
    from .application import given_options

    options = given_options(timeout=timeout, max_attempts=max_attempts)
    chosen = split_list(subsets, "--subsets")
    table = cost_gate(
        lambda: plan_upload(
            benchmark,
            value_of(content),
            chosen,
            parsing=value_of(parsing),
            store_prefix=store_prefix or None,
            options=options,
            cache_dir=cache_dir,
        ),
        plan,
        max_cost,
        prices,
    )
    if table is None:
        return
    ensure_directory(cache_dir, "--cache-dir")
    usage = Usage()
    summaries = with_ceiling(
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
        max_cost,
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

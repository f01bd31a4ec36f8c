"""`evals-repro serve-reranker` and `serve-embedder`: local replicas on vLLM (the `gpu` dependency group)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .application import app


@app.command("serve-reranker", context_settings={"allow_extra_args": True, "ignore_unknown_options": False})
def serve_reranker_command(
    ctx: typer.Context,
    model: str = typer.Argument(..., help="qwen3-8b | zerank-2"),
    devices: Optional[list[str]] = typer.Option(
        None, "--devices", help="GPU indices (as nvidia-smi numbers them), one replica each: --devices 0 1."
    ),
    host: str = typer.Option("127.0.0.1", help="Address the replicas listen on."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the exact commands and start nothing."),
    log_dir: Path = typer.Option(Path("logs/serve-reranker"), "--log-dir", help="One log file per replica."),
    startup_timeout: float = typer.Option(3600.0, "--startup-timeout", help="Seconds to wait for /health."),
) -> None:
    """Serve qwen3-8b (ports 8300...) or zerank-2 (8400...) on vLLM, one replica per GPU, until Ctrl-C."""
    from ..errors import UsageError
    from ..progress import console
    from ..rerankers.serve import serve

    extra = list(ctx.args)
    if extra and not devices:
        raise UsageError(f"unexpected argument(s) {' '.join(extra)}", "name GPUs with --devices 0 1")
    names = [d for value in [*(devices or []), *extra] for d in value.replace(",", " ").split() if d]

    def echo(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    code = serve(
        model,
        names,
        host=host,
        dry_run=dry_run,
        log_dir=log_dir,
        startup_timeout=startup_timeout,
        echo=typer.echo if dry_run else echo,
    )
    if code:
        raise typer.Exit(code)


@app.command("serve-embedder", context_settings={"allow_extra_args": True, "ignore_unknown_options": False})
def serve_embedder_command(
    ctx: typer.Context,
    model: str = typer.Argument(..., help="A Hub embedding model, e.g. intfloat/e5-large-v2."),
    devices: Optional[list[str]] = typer.Option(
        None, "--devices", help="GPU indices (as nvidia-smi numbers them), one replica each: --devices 0 1."
    ),
    revision: Optional[str] = typer.Option(
        None, "--revision", help="The model's full commit sha (default: the Hub's current commit, printed)."
    ),
    trust_remote_code: bool = typer.Option(
        False, "--trust-remote-code", help="Let vLLM run the model's own code (nomic-embed-text needs it)."
    ),
    host: str = typer.Option("127.0.0.1", help="Address the replicas listen on."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the exact commands and start nothing."),
    log_dir: Path = typer.Option(Path("logs/serve-embedder"), "--log-dir", help="One log file per replica."),
    startup_timeout: float = typer.Option(3600.0, "--startup-timeout", help="Seconds to wait for /health."),
) -> None:
    """Serve a Hub embedding model on vLLM (ports 8500...), one pooling replica per GPU, for openai:<model>."""
    from ..errors import UsageError
    from ..progress import console
    from ..serve_embedder import serve

    extra = list(ctx.args)
    if extra and not devices:
        raise UsageError(f"unexpected argument(s) {' '.join(extra)}", "name GPUs with --devices 0 1")
    names = [d for value in [*(devices or []), *extra] for d in value.replace(",", " ").split() if d]

    def echo(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    code = serve(
        model,
        names,
        revision=revision,
        host=host,
        trust_remote_code=trust_remote_code,
        dry_run=dry_run,
        log_dir=log_dir,
        startup_timeout=startup_timeout,
        echo=typer.echo if dry_run else echo,
    )
    if code:
        raise typer.Exit(code)

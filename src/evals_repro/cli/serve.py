"""`evals-repro serve-reranker` and `serve-embedder`: local replicas on vLLM (the `gpu` dependency group)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Optional

import typer

from .application import app

# `--devices 0 1`: the indices after the first arrive as extra arguments.
EXTRA_DEVICES = {"allow_extra_args": True, "ignore_unknown_options": False}
DEVICES = typer.Option(
    None, "--devices", help="GPU indices (as nvidia-smi numbers them), one replica each: --devices 0 1."
)
HOST = typer.Option(
    "127.0.0.1",
    help="Address the replicas listen on: 127.0.0.1 this machine only, 0.0.0.0 other machines too "
    "(set VLLM_API_KEY: each replica then requires it).",
)
API_KEY = typer.Option(
    None,
    "--api-key",
    help="Refused: a key on the command line shows in `ps` and shell history. Export VLLM_API_KEY (or put it "
    "in .env): each replica reads it from its environment.",
)
DRY_RUN = typer.Option(False, "--dry-run", help="Print the exact commands and start nothing.")
STARTUP_TIMEOUT = typer.Option(3600.0, "--startup-timeout", help="Seconds to wait for /health.")


def _device_names(ctx: typer.Context, devices: Optional[list[str]]) -> list[str]:
    """GPU indices from --devices, the words after it and comma lists alike; stray words without --devices refused."""
    from ..base.errors import UsageError

    extra = list(ctx.args)
    if extra and not devices:
        raise UsageError(f"unexpected argument(s) {' '.join(extra)}", "name GPUs with --devices 0 1")
    return [d for value in [*(devices or []), *extra] for d in value.replace(",", " ").split() if d]


def _echo(dry_run: bool) -> Callable[[str], None]:
    """A dry run prints plain commands to stdout (to paste); a live one prints progress lines on the console."""
    from ..base.progress import console

    def echo(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    return typer.echo if dry_run else echo


def _no_key_option(api_key: Optional[str]) -> None:
    if api_key is not None:
        from ..serving.access import refuse_key_option

        raise refuse_key_option()


def _exit_with(code: int) -> None:
    if code:
        raise typer.Exit(code)


@app.command("serve-reranker", context_settings=EXTRA_DEVICES)
def serve_reranker_command(
    ctx: typer.Context,
    model: str = typer.Argument(..., help="qwen3-8b | zerank-2"),
    devices: Optional[list[str]] = DEVICES,
    host: str = HOST,
    dry_run: bool = DRY_RUN,
    log_dir: Path = typer.Option(Path("logs/serve-reranker"), "--log-dir", help="One log file per replica."),
    startup_timeout: float = STARTUP_TIMEOUT,
    api_key: Optional[str] = API_KEY,
) -> None:
    """Serve qwen3-8b (ports 8300...) or zerank-2 (8400...) on vLLM, one replica per GPU, until Ctrl-C.

    The replicas' key, if any, comes from VLLM_API_KEY (environment or .env)."""
    _no_key_option(api_key)
    from ..serving.reranker import serve

    code = serve(
        model,
        _device_names(ctx, devices),
        host=host,
        dry_run=dry_run,
        log_dir=log_dir,
        startup_timeout=startup_timeout,
        echo=_echo(dry_run),
    )
    _exit_with(code)


@app.command("serve-embedder", context_settings=EXTRA_DEVICES)
def serve_embedder_command(
    ctx: typer.Context,
    model: str = typer.Argument(..., help="A Hub embedding model, e.g. intfloat/e5-large-v2."),
    devices: Optional[list[str]] = DEVICES,
    revision: Optional[str] = typer.Option(
        None, "--revision", help="The model's full commit sha (default: the Hub's current commit, printed)."
    ),
    trust_remote_code: bool = typer.Option(
        False, "--trust-remote-code", help="Let vLLM run the model's own code (nomic-embed-text needs it)."
    ),
    host: str = HOST,
    dry_run: bool = DRY_RUN,
    log_dir: Path = typer.Option(Path("logs/serve-embedder"), "--log-dir", help="One log file per replica."),
    startup_timeout: float = STARTUP_TIMEOUT,
    api_key: Optional[str] = API_KEY,
) -> None:
    """Serve a Hub embedding model on vLLM (ports 8500...), one pooling replica per GPU, for openai:<model>.

    The replicas' key, if any, comes from VLLM_API_KEY (environment or .env)."""
    _no_key_option(api_key)
    from ..serving.embedder import serve

    code = serve(
        model,
        _device_names(ctx, devices),
        revision=revision,
        host=host,
        trust_remote_code=trust_remote_code,
        dry_run=dry_run,
        log_dir=log_dir,
        startup_timeout=startup_timeout,
        echo=_echo(dry_run),
    )
    _exit_with(code)

"""`evals-repro serve-embedder MODEL --devices 0 [1 ...] [--revision SHA]`: one vLLM pooling replica per GPU.

Each replica runs `vllm serve MODEL --runner pooling --convert embed` (vllm==0.33.0, the `gpu` group) at a
full-sha revision, for the checkpoint and its tokenizer both, and serves it under `MODEL@SHA`: what
`/v1/models` reports, and so what the embedding cache of `openai:<model>` is keyed by, names the exact
commit. Without `--revision` the Hub's current commit of MODEL is looked up once and printed. Replica i
listens on 8500 + i and sees only its GPU; the command waits for every `/health`, prints the URLs, the
`export OPENAI_BASE_URLS=...` line and the method name to run, and stops every replica on Ctrl-C.
`--dry-run` prints the commands. `--host 0.0.0.0` serves other machines (the printed URLs name this one), and
`VLLM_API_KEY` is handed to each replica as its key (serving/access.py). The launcher is serve-reranker's
(serving/reranker.py).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from pathlib import Path

from ..base.errors import ConfigurationError, UsageError
from . import reranker as launcher
from .access import announce_access, check_host, replica_key

logger = logging.getLogger(__name__)

BASE_PORT = 8500
DEFAULT_LOG_DIR = Path("logs/serve-embedder")
FULL_SHA = re.compile(r"[0-9a-f]{40}")
MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")


def check_model(model: str) -> str:
    if not MODEL_ID.fullmatch(model):
        raise UsageError(f"'{model}' is not a Hub model id", "write <owner>/<name>, e.g. intfloat/e5-large-v2")
    return model


def check_revision(revision: str) -> str:
    if not FULL_SHA.fullmatch(revision):
        raise UsageError(
            f"--revision '{revision}' is not a full commit sha",
            "give the 40-hex-digit commit (a branch or tag moves; a pinned run must not)",
        )
    return revision


def hub_revision(model: str) -> str:
    """The Hub's current commit of `model` (one call; the machine that serves reaches the Hub)."""
    from huggingface_hub import HfApi

    try:
        sha = HfApi().model_info(model, timeout=30).sha
    except Exception as exc:  # noqa: BLE001 - any Hub failure is one line with the fix
        raise ConfigurationError(
            f"cannot look up the current commit of {model} on the Hub ({type(exc).__name__})",
            "pass --revision <40-hex sha> (the commit on the model page's history)",
        ) from None
    return check_revision(str(sha))


def serve_argv(model: str, revision: str, host: str, port: int, trust_remote_code: bool = False) -> tuple[str, ...]:
    return (
        "vllm",
        "serve",
        model,
        "--revision",
        revision,
        "--tokenizer",
        model,
        "--tokenizer-revision",
        revision,
        "--served-model-name",
        f"{model}@{revision}",
        "--runner",
        "pooling",
        "--convert",
        "embed",
        *(("--trust-remote-code",) if trust_remote_code else ()),
        "--host",
        host,
        "--port",
        str(port),
    )


def replica_commands(
    model: str, revision: str, devices: list[str], host: str = launcher.DEFAULT_HOST, trust_remote_code: bool = False
) -> list[launcher.ReplicaCommand]:
    check_model(model)
    check_revision(revision)
    launcher.check_devices(devices, "serve-embedder", model)
    return [
        launcher.ReplicaCommand(
            device,
            launcher.mapped_device(device),
            host,
            BASE_PORT + i,
            serve_argv(model, revision, host, BASE_PORT + i, trust_remote_code),
        )
        for i, device in enumerate(devices)
    ]


def ready_lines(model: str, revision: str, urls: list[str]) -> list[str]:
    served = f"{model}@{revision}"
    return [
        f"{model}: {len(urls)} replica(s) serving {served}",
        "export OPENAI_BASE_URLS=" + ",".join(f"{url}/v1" for url in urls),
        f"then: evals-repro run openai:{served} --benchmark <benchmark>",
    ]


def serve(
    model: str,
    devices: list[str],
    *,
    revision: str | None = None,
    host: str = launcher.DEFAULT_HOST,
    trust_remote_code: bool = False,
    dry_run: bool = False,
    log_dir: Path = DEFAULT_LOG_DIR,
    startup_timeout: float = launcher.STARTUP_TIMEOUT,
    echo: Callable[[str], None] | None = None,
    check: Callable[[list[launcher.ReplicaCommand]], None] | None = None,
    executable: list[str] | None = None,
    is_healthy: Callable[[str], bool] = launcher.healthy,
    poll: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
    resolve: Callable[[str], str] = hub_revision,
) -> int:
    """Start the replicas and keep them up until Ctrl-C (or print the commands); returns the exit code."""
    echo = echo or logger.info
    check_model(model)
    check_host(host)
    key = replica_key()
    if revision is None:
        revision = resolve(model)
        echo(f"{model}: no --revision given, serving the Hub's current commit {revision}")
    commands = replica_commands(model, revision, devices, host, trust_remote_code)
    if dry_run:
        for command in commands:
            echo(command.shell())
        for line in ready_lines(model, revision, [c.url for c in commands]):
            echo(line)
        announce_access("serve-embedder", host, key, lambda line: None)  # the commands alone on stdout
        return 0
    if check is not None:
        check(commands)
    else:
        launcher.check_environment(commands, command="serve-embedder")
    announce_access("serve-embedder", host, key, echo)
    return launcher.run_replicas(
        model,
        commands,
        lambda urls: ready_lines(model, revision, urls),
        key=key,
        log_dir=log_dir,
        startup_timeout=startup_timeout,
        echo=echo,
        executable=executable,
        is_healthy=is_healthy,
        poll=poll,
        sleep=sleep,
    )

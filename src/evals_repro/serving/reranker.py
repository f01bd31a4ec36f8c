"""`evals-repro serve-reranker qwen3-8b|zerank-2 --devices 0 [1 ...]`: one vLLM replica per GPU.

The command line of every replica is generated from the model spec (local_models.py): the pinned
checkpoint and tokenizer revisions, the score head (`--hf-overrides`, `--pooler-config`), BF16, the
32,768-token context, and prefix caching disabled explicitly (vLLM 0.33 turns it on by default for a
LAST-pooling decoder). Replica i listens on the spec's base port + i (8300... for qwen3-8b, 8400...
for zerank-2) and sees only its GPU (`CUDA_VISIBLE_DEVICES`, numbered as nvidia-smi numbers them).
The command waits until every replica answers `/health`, prints the URLs (and the environment line
the clients read), and stops every replica it started on Ctrl-C. `--dry-run` prints the commands.
`--host 0.0.0.0` serves other machines (the printed URLs then name this one), and `VLLM_API_KEY` is handed
to each replica as its key, in its environment (serving/access.py).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ConfigurationError, UsageError
from ..providers.settings import SERVER_KEY_ENV
from ..rerankers.local_models import LocalRerankerSpec, get_spec, hf_overrides_json, pooler_config_json
from .access import advertised_host, announce_access, check_host, probe_host, replica_key, url_host

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_LOG_DIR = Path("logs/serve-reranker")
STARTUP_TIMEOUT = 3600.0  # seconds: a first start downloads the checkpoint (about 16 GB for qwen3-8b)
STOP_TIMEOUT = 30.0
GPU_GROUP_PREFIX = "uv run --locked --group gpu evals-repro"


@dataclass(frozen=True)
class ReplicaCommand:
    device: str  # as given to --devices
    visible: str  # what CUDA_VISIBLE_DEVICES names (the same unless an outer CUDA_VISIBLE_DEVICES remaps)
    host: str
    port: int
    argv: tuple[str, ...]

    @property
    def env(self) -> dict[str, str]:
        return {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": self.visible}

    @property
    def url(self) -> str:
        """Where the clients reach the replica (this machine's name when it listens on every interface)."""
        return f"http://{url_host(advertised_host(self.host))}:{self.port}"

    @property
    def probe_url(self) -> str:
        """Where this machine reaches it, for /health."""
        return f"http://{url_host(probe_host(self.host))}:{self.port}"

    def shell(self) -> str:
        """The exact command, as a line a shell runs."""
        prefix = " ".join(f"{key}={value}" for key, value in self.env.items())
        return f"{prefix} {shlex.join(self.argv)}"


def serve_argv(spec: LocalRerankerSpec, host: str, port: int) -> tuple[str, ...]:
    return (
        "vllm",
        "serve",
        spec.checkpoint,
        "--revision",
        spec.revision,
        "--tokenizer",
        spec.tokenizer_repo,
        "--tokenizer-revision",
        spec.revision,
        "--served-model-name",
        spec.model_id,
        "--runner",
        "pooling",
        "--convert",
        "classify",
        "--hf-overrides",
        hf_overrides_json(spec),
        "--pooler-config",
        pooler_config_json(spec),
        "--dtype",
        spec.dtype,
        "--max-model-len",
        str(spec.context_tokens),
        "--disable-prefix-caching",
        "--host",
        host,
        "--port",
        str(port),
    )


def check_devices(devices: list[str], command: str, model: str) -> None:
    """One replica per GPU: at least one --devices index, each a whole number (nvidia-smi's), each once."""
    if not devices:
        raise UsageError(f"{command} needs --devices", f"write e.g. {command} {model} --devices 0 1")
    for device in devices:
        if not device.isdigit():
            raise UsageError(
                f"--devices: '{device}' is not a GPU index", "give nvidia-smi's numbers, e.g. --devices 0 1"
            )
    if len(set(devices)) != len(devices):
        raise UsageError(f"--devices names a GPU twice: {' '.join(devices)}", "one replica per GPU: list each once")


def replica_commands(name: str, devices: list[str], host: str = DEFAULT_HOST) -> list[ReplicaCommand]:
    spec = get_spec(name)
    check_devices(devices, "serve-reranker", name)
    return [
        ReplicaCommand(
            device, mapped_device(device), host, spec.base_port + i, serve_argv(spec, host, spec.base_port + i)
        )
        for i, device in enumerate(devices)
    ]


def visible_gpus() -> list[str]:
    """nvidia-smi's GPU indices; empty when there is no NVIDIA driver or GPU."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        listed = subprocess.run(
            ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return (
        [line.strip() for line in listed.stdout.splitlines() if line.strip().isdigit()]
        if listed.returncode == 0
        else []
    )


def vllm_installed() -> bool:
    return importlib.util.find_spec("vllm") is not None


def missing_requirements(
    gpus: Callable[[], list[str]] | None = None,
    has_vllm: Callable[[], bool] | None = None,
    platform: str | None = None,
) -> list[str]:
    platform = sys.platform if platform is None else platform
    missing = []
    if not platform.startswith("linux"):
        missing.append(f"Linux (this is {platform})")
    if not (has_vllm or vllm_installed)():
        missing.append("vLLM (the gpu dependency group is not installed)")
    if not (gpus or visible_gpus)():
        missing.append("an NVIDIA GPU (nvidia-smi finds none)")
    return missing


def check_environment(
    commands: list[ReplicaCommand],
    gpus: Callable[[], list[str]] | None = None,
    has_vllm: Callable[[], bool] | None = None,
    platform: str | None = None,
    command: str = "serve-reranker",
) -> None:
    """One line naming everything missing; then the GPUs asked for must exist and the ports be free."""
    missing = missing_requirements(gpus, has_vllm, platform)
    if missing:
        raise ConfigurationError(
            f"{command} cannot start replicas here: missing " + "; ".join(missing),
            f"on a Linux machine with NVIDIA GPUs run `{GPU_GROUP_PREFIX} {command} <model> --devices 0 ...` "
            "(--dry-run prints the commands anywhere)",
        )
    if "CUDA_VISIBLE_DEVICES" not in os.environ:
        present = (gpus or visible_gpus)()
        absent = [c.device for c in commands if c.device not in present]
        if absent:
            raise UsageError(
                f"--devices: no GPU {', '.join(absent)} on this machine", f"nvidia-smi lists {', '.join(present)}"
            )
    for replica in commands:
        family = socket.AF_INET6 if ":" in replica.host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((replica.host, replica.port))
            except OSError:
                raise UsageError(
                    f"port {replica.port} on {replica.host} is already in use",
                    f"stop what listens there (an earlier {command}?) before starting replicas",
                ) from None


def mapped_device(device: str) -> str:
    """A device index as CUDA_VISIBLE_DEVICES must name it: through an outer CUDA_VISIBLE_DEVICES if set."""
    outer = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if not outer:
        return device
    if int(device) >= len(outer):
        raise UsageError(
            f"--devices {device}: CUDA_VISIBLE_DEVICES={','.join(outer)} leaves {len(outer)} GPU(s)",
            f"give indices below {len(outer)}",
        )
    return outer[int(device)]


def healthy(url: str) -> bool:
    import httpx

    try:
        return httpx.get(url + "/health", timeout=5.0).status_code == 200
    except httpx.HTTPError:
        return False


def _vllm_executable() -> list[str]:
    found = shutil.which("vllm")
    return [found] if found else [sys.executable, "-m", "vllm.entrypoints.cli.main"]


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])


@dataclass
class Running:
    command: ReplicaCommand
    process: subprocess.Popen
    log: Path


def _stop(running: list[Running], timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM each replica's process group (we started each as its own session), then SIGKILL."""
    for replica in running:
        if replica.process.poll() is None:
            try:
                os.killpg(replica.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + timeout
    for replica in running:
        try:
            replica.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(replica.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            replica.process.wait()


def serve(
    name: str,
    devices: list[str],
    *,
    host: str = DEFAULT_HOST,
    dry_run: bool = False,
    log_dir: Path = DEFAULT_LOG_DIR,
    startup_timeout: float = STARTUP_TIMEOUT,
    echo: Callable[[str], None] | None = None,
    check: Callable[[list[ReplicaCommand]], None] | None = None,
    executable: list[str] | None = None,
    is_healthy: Callable[[str], bool] = healthy,
    poll: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Start the replicas and keep them up until Ctrl-C; returns the exit code."""
    echo = echo or logger.info  # no callback: the lines are log records (the CLI passes its console)
    spec = get_spec(name)
    commands = replica_commands(name, devices, check_host(host))
    key = replica_key()
    if dry_run:
        for command in commands:
            echo(command.shell())
        announce_access("serve-reranker", host, key, lambda line: None)  # the commands alone on stdout
        return 0
    (check or check_environment)(commands)
    announce_access("serve-reranker", host, key, echo)

    def ready(urls: list[str]) -> list[str]:
        return [
            f"{name}: {len(urls)} replica(s) serving {spec.model_id}; prefix caching disabled",
            f"export {spec.urls_env}={','.join(urls)}",
        ]

    return run_replicas(
        name,
        commands,
        ready,
        key=key,
        log_dir=log_dir,
        startup_timeout=startup_timeout,
        echo=echo,
        executable=executable,
        is_healthy=is_healthy,
        poll=poll,
        sleep=sleep,
    )


def run_replicas(
    name: str,
    commands: list[ReplicaCommand],
    ready: Callable[[list[str]], list[str]],
    *,
    key: str | None = None,
    log_dir: Path,
    startup_timeout: float,
    echo: Callable[[str], None],
    executable: list[str] | None = None,
    is_healthy: Callable[[str], bool] = healthy,
    poll: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Start one vLLM process per command, wait for every /health, print `ready(urls)`, keep them up until
    Ctrl-C (or one exits), then stop them all. Shared by serve-reranker and serve-embedder. `key` reaches each
    replica as VLLM_API_KEY in its environment (which vLLM reads as --api-key), never on its command line."""
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    program = executable or _vllm_executable()
    running: list[Running] = []
    try:
        for command in commands:
            log = log_dir / f"{name.replace('/', '--')}-{command.port}.log"
            env = {**os.environ, **command.env}
            env.pop(SERVER_KEY_ENV, None)  # the key given, or none: not one left over in our environment
            if key:
                env[SERVER_KEY_ENV] = key
            with open(log, "ab") as handle:
                process = subprocess.Popen(
                    [*program, *command.argv[1:]],
                    env=env,
                    stdout=handle,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,  # its own process group: Ctrl-C reaches us, we stop it
                )
            running.append(Running(command, process, log))
            echo(f"{name}: starting a replica on GPU {command.device} at {command.url} (log: {log})")
        waiting = {r.command.probe_url: r for r in running}
        deadline = time.monotonic() + startup_timeout
        while waiting:
            for url, replica in list(waiting.items()):
                code = replica.process.poll()
                if code is not None:
                    raise ConfigurationError(
                        f"{name} replica on GPU {replica.command.device} exited with code {code} before it was "
                        f"healthy ({_tail(replica.log)})",
                        f"read {replica.log}",
                    )
                if is_healthy(url):
                    echo(f"{name}: ready at {replica.command.url}")
                    del waiting[url]
            if waiting and time.monotonic() > deadline:
                raise ConfigurationError(
                    f"{name}: {len(waiting)} replica(s) not healthy after {startup_timeout:.0f} s",
                    "read the logs in " + str(log_dir) + ", or raise --startup-timeout",
                )
            if waiting:
                sleep(poll)
        for line in ready([r.command.url for r in running]):
            echo(line)
        echo("Ctrl-C stops them.")
        while True:
            for replica in running:
                code = replica.process.poll()
                if code is not None:
                    raise ConfigurationError(
                        f"{name} replica on GPU {replica.command.device} ({replica.command.url}) exited with code {code}",
                        f"read {replica.log}; the other replicas were stopped",
                    )
            sleep(poll)
    except KeyboardInterrupt:
        echo(f"{name}: stopping {len(running)} replica(s)")
        return 0
    finally:
        _stop(running)
        if running:
            echo(f"{name}: stopped {len(running)} replica(s)")

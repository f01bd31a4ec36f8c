"""`evals-repro serve-embedder`: the exact vLLM 0.33.0 commands, checked option by option against vLLM's own
argument definitions, the replica lifecycle, and one-line refusals.

The option table (tests/data/vllm-0.33.0-serve-options.json) was taken from the vllm==0.33.0 wheel's source,
not written by hand: `pip download vllm==0.33.0 --no-deps -d /tmp/vllm`, then `uv run python
tests/vllm_options.py /tmp/vllm/vllm-0.33.0-*.whl` (it parses vllm/engine/arg_utils.py, the config
dataclasses of vllm/config/ and vllm/entrypoints/common/cli_args.py with `ast`; see that module). When the
wheel is at $VLLM_WHEEL (or /tmp/vllm), a test re-derives the table from it and compares.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
from pathlib import Path

import pytest

from evals_repro.base.errors import ConfigurationError
from evals_repro.cli import main
from evals_repro.serving import embedder as serve_embedder
from evals_repro.serving import reranker as reranker_serving
from fakes.vllm_stand_in import SCRIPT as STAND_IN
from vllm_options import check_argv, option_table

TABLE_PATH = Path(__file__).parent / "data" / "vllm-0.33.0-serve-options.json"
TABLE = json.loads(TABLE_PATH.read_text())
SHA = "ab5c6e9d0f1e2d3c4b5a69788796a5b4c3d2e1f0"
E5_0 = (
    "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0 vllm serve intfloat/e5-large-v2 "
    f"--revision {SHA} --tokenizer intfloat/e5-large-v2 --tokenizer-revision {SHA} "
    f"--served-model-name intfloat/e5-large-v2@{SHA} --runner pooling --convert embed "
    "--host 127.0.0.1 --port 8500"
)


@pytest.fixture(autouse=True)
def no_outer_cuda_devices(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_dry_run_prints_commands_urls_and_the_export_line(capsys):
    args = ["serve-embedder", "intfloat/e5-large-v2", "--devices", "0", "1", "--revision", SHA, "--dry-run"]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == E5_0
    assert lines[1] == E5_0.replace("VISIBLE_DEVICES=0", "VISIBLE_DEVICES=1").replace("8500", "8501")
    assert lines[3] == "export OPENAI_BASE_URLS=http://127.0.0.1:8500/v1,http://127.0.0.1:8501/v1"
    assert lines[4] == f"then: evals-repro run openai:intfloat/e5-large-v2@{SHA} --benchmark <benchmark>"


@pytest.mark.parametrize("trust", [False, True])
def test_every_option_is_one_vllm_0_33_serve_defines_with_a_valid_value(trust):
    (command,) = serve_embedder.replica_commands("nomic-ai/nomic-embed-text-v1.5", SHA, ["0"], trust_remote_code=trust)
    words = shlex.split(command.shell())[2:]  # past the environment assignments
    assert words == list(command.argv)
    assert check_argv(command.argv, TABLE) == []
    assert ("--trust-remote-code" in command.argv) is trust


def test_the_table_catches_what_vllm_would_refuse():
    # hand-written wrong command lines: each must be caught, or the comparison proves nothing
    assert check_argv(["vllm", "serve", "m", "--runner", "embedding"], TABLE) == [
        "--runner embedding: not one of ['auto', 'draft', 'generate', 'pooling']"
    ]
    # --task was replaced by --runner/--convert before 0.33; its value is then a stray word too
    assert check_argv(["vllm", "serve", "m", "--task", "embed"], TABLE) == [
        "--task: not a vllm serve option",
        "embed: not a vllm serve option",
    ]
    assert check_argv(["vllm", "serve", "m", "--convert", "embedding"], TABLE) == [
        "--convert embedding: not one of ['auto', 'classify', 'embed', 'none']"
    ]
    assert check_argv(["vllm", "serve", "m", "--port"], TABLE) == ["--port: needs a value"]


def test_serve_reranker_commands_pass_the_same_check():
    for name in ("qwen3-8b", "zerank-2"):
        (command,) = reranker_serving.replica_commands(name, ["0"])
        assert check_argv(command.argv, TABLE) == []


def wheel() -> Path | None:
    given = os.environ.get("VLLM_WHEEL")
    if given:
        return Path(given)
    found = sorted(Path("/tmp/vllm").glob("vllm-0.33.0-*.whl"))
    return found[0] if found else None


def test_the_checked_in_table_is_what_the_wheel_defines():
    path = wheel()
    if path is None or not path.exists():
        pytest.skip("no vllm 0.33.0 wheel: `pip download vllm==0.33.0 --no-deps -d /tmp/vllm` to re-derive the table")
    assert option_table(path) == TABLE


@pytest.mark.parametrize(
    "argv, message",
    [
        (["intfloat/e5-large-v2", "--revision", SHA, "--dry-run"], "serve-embedder needs --devices"),
        (["intfloat/e5-large-v2", "--devices", "0", "0", "--revision", SHA, "--dry-run"], "names a GPU twice"),
        (["intfloat/e5-large-v2", "--devices", "0", "--revision", "main", "--dry-run"], "is not a full commit sha"),
        (["e5-large-v2", "--devices", "0", "--revision", SHA, "--dry-run"], "'e5-large-v2' is not a Hub model id"),
    ],
)
def test_bad_arguments_are_one_line(argv, message, capsys):
    assert main(["serve-embedder", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_without_revision_the_hubs_commit_is_looked_up_and_printed():
    lines: list[str] = []
    code = serve_embedder.serve(
        "intfloat/e5-large-v2", ["0"], dry_run=True, echo=lines.append, resolve=lambda model: SHA
    )
    assert code == 0
    assert lines[0] == f"intfloat/e5-large-v2: no --revision given, serving the Hub's current commit {SHA}"
    assert lines[1] == E5_0


def test_an_unreachable_hub_without_revision_is_one_line(monkeypatch, capsys):
    from huggingface_hub import constants  # read once at import: patch the value, never HF_ENDPOINT here

    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    assert main(["serve-embedder", "intfloat/e5-large-v2", "--devices", "0", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "cannot look up the current commit of intfloat/e5-large-v2" in err and "--revision" in err
    assert err.count("\n") == 1


def test_without_gpu_or_group_says_what_is_missing(monkeypatch, capsys):
    monkeypatch.setattr(reranker_serving, "vllm_installed", lambda: False)
    monkeypatch.setattr(reranker_serving, "visible_gpus", lambda: [])
    monkeypatch.setattr(reranker_serving.sys, "platform", "linux")
    assert main(["serve-embedder", "intfloat/e5-large-v2", "--devices", "0", "--revision", SHA]) == 2
    err = capsys.readouterr().err
    assert "serve-embedder cannot start replicas here: missing vLLM" in err
    assert "uv run --locked --group gpu evals-repro serve-embedder" in err and err.count("\n") == 1


def test_starts_waits_prints_and_stops(tmp_path, monkeypatch):
    monkeypatch.setenv("STAND_IN_RECORD", str(tmp_path / "record"))
    ports = []
    for _ in range(2):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
    real = serve_embedder.replica_commands

    def commands(*args, **kwargs):  # free ports instead of 8500/8501
        made = real(*args, **kwargs)
        return [
            reranker_serving.ReplicaCommand(c.device, c.visible, c.host, port, (*c.argv[:-1], str(port)))
            for c, port in zip(made, ports)
        ]

    monkeypatch.setattr(serve_embedder, "replica_commands", commands)
    lines: list[str] = []

    def sleep(seconds):
        if any(line.startswith("export ") for line in lines):
            raise KeyboardInterrupt
        import time

        time.sleep(0.1)

    code = serve_embedder.serve(
        "intfloat/e5-large-v2",
        ["0", "1"],
        revision=SHA,
        log_dir=tmp_path / "logs",
        echo=lines.append,
        check=lambda commands: None,
        executable=[sys.executable, str(STAND_IN)],
        startup_timeout=60,
        poll=0.05,
        sleep=sleep,
    )
    assert code == 0
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    assert "export OPENAI_BASE_URLS=" + ",".join(f"{u}/v1" for u in urls) in lines
    assert lines[-1] == "intfloat/e5-large-v2: stopped 2 replica(s)"
    for device, port in zip(["0", "1"], ports):
        record = json.loads((tmp_path / f"record.{port}").read_text())
        assert record["visible"] == device and record["argv"][:2] == ["serve", "intfloat/e5-large-v2"]
        assert (tmp_path / "logs" / f"intfloat--e5-large-v2-{port}.log").exists()


def test_a_replica_that_dies_while_loading_is_reported(tmp_path):
    script = tmp_path / "dies.py"
    script.write_text("import sys; print('model type bert-xl not supported'); sys.exit(1)\n")
    with pytest.raises(ConfigurationError, match=r"exited with code 1 before it was healthy \(model type"):
        serve_embedder.serve(
            "intfloat/e5-large-v2",
            ["0"],
            revision=SHA,
            log_dir=tmp_path / "logs",
            echo=lambda line: None,
            check=lambda commands: None,
            executable=[sys.executable, str(script)],
            is_healthy=lambda url: False,
            poll=0.05,
        )


def test_a_wildcard_host_serves_other_machines_under_this_ones_name(monkeypatch, capsys):
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    args = ["serve-embedder", "intfloat/e5-large-v2", "--devices", "0", "--revision", SHA, "--host", "0.0.0.0"]
    assert main([*args, "--dry-run"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == E5_0.replace("--host 127.0.0.1", "--host 0.0.0.0")  # vLLM listens on every interface
    assert lines[2] == f"export OPENAI_BASE_URLS=http://{socket.gethostname()}:8500/v1"  # what other machines use
    assert err == (
        "warning: serve-embedder: the replicas listen on 0.0.0.0 with no key: anyone who reaches these ports can "
        "use them (export VLLM_API_KEY before starting to require one)\n"
    )
    monkeypatch.setenv("VLLM_API_KEY", "vk-a-key-for-the-replicas")
    assert main([*args, "--dry-run"]) == 0
    assert capsys.readouterr().err == ""  # keyed: no warning (and the key is never printed: test_secrets.py)


@pytest.mark.parametrize("command", ["serve-embedder", "serve-reranker"])
def test_a_key_on_the_command_line_is_refused_without_showing_it(command, capsys):
    model = "intfloat/e5-large-v2" if command == "serve-embedder" else "qwen3-8b"
    args = [command, model, "--devices", "0", "--revision", SHA][: 6 if command == "serve-embedder" else 4]
    assert main([*args, "--api-key", "vk-typed-on-the-command-line", "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "typed-on-the" not in err
    assert "--api-key is not taken on the command line: it would show in `ps` and in your shell history" in err
    assert "export VLLM_API_KEY=... (or put it in .env): each replica reads it from its environment" in err


@pytest.mark.parametrize("host", ["http://gpu-host", "gpu-host:8500", ""])
def test_a_host_that_is_not_an_address_is_one_line(host, capsys):
    args = ["serve-embedder", "intfloat/e5-large-v2", "--devices", "0", "--revision", SHA, "--host", host]
    assert main([*args, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"--host '{host}' is not an address to listen on" in err and err.count("\n") == 1

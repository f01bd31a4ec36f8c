"""`evals-repro serve-reranker`: the exact vLLM commands, what is missing without a GPU, and the replica lifecycle."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from evals_repro.base.errors import ConfigurationError, UsageError
from evals_repro.cli import main
from evals_repro.serving import reranker as serving
from fakes.vllm_stand_in import SCRIPT as STAND_IN

QWEN_0 = (
    "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0 vllm serve Qwen/Qwen3-Reranker-8B "
    "--revision 77d193c791ed757ca307ee72715aa132723da912 "
    "--tokenizer Qwen/Qwen3-Reranker-8B --tokenizer-revision 77d193c791ed757ca307ee72715aa132723da912 "
    "--served-model-name Qwen/Qwen3-Reranker-8B@77d193c791ed757ca307ee72715aa132723da912 "
    "--runner pooling --convert classify "
    '--hf-overrides \'{"architectures":["Qwen3ForSequenceClassification"],'
    '"classifier_from_token":["no","yes"],"is_original_qwen3_reranker":true}\' '
    '--pooler-config \'{"seq_pooling_type":"LAST","use_activation":true}\' '
    "--dtype bfloat16 --max-model-len 32768 --disable-prefix-caching --host 127.0.0.1 --port 8300"
)
ZERANK = (
    "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={device} vllm serve zeroentropy/zerank-2 "
    "--revision 5eae30d5ee3c6b2df2ef6d723bde45172d761c4c "
    "--tokenizer zeroentropy/zerank-2 --tokenizer-revision 5eae30d5ee3c6b2df2ef6d723bde45172d761c4c "
    "--served-model-name zeroentropy/zerank-2@5eae30d5ee3c6b2df2ef6d723bde45172d761c4c "
    "--runner pooling --convert classify "
    '--hf-overrides \'{{"architectures":["Qwen3ForSequenceClassification"],'
    '"classifier_from_token":["Yes"],"method":"no_post_processing"}}\' '
    '--pooler-config \'{{"seq_pooling_type":"LAST","use_activation":false}}\' '
    "--dtype bfloat16 --max-model-len 32768 --disable-prefix-caching --host 127.0.0.1 --port {port}"
)


@pytest.fixture(autouse=True)
def no_outer_cuda_devices(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_dry_run_one_device(capsys):
    assert main(["serve-reranker", "qwen3-8b", "--devices", "0", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == [QWEN_0]


def test_dry_run_two_devices(capsys):
    assert main(["serve-reranker", "zerank-2", "--devices", "2", "3", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        ZERANK.format(device=2, port=8400),
        ZERANK.format(device=3, port=8401),
    ]


def test_dry_run_commands_parse_back_to_the_same_arguments():
    import shlex

    (command,) = serving.replica_commands("qwen3-8b", ["0"])
    words = shlex.split(command.shell())
    assert words[2:] == list(command.argv)


def test_outer_cuda_visible_devices_is_respected(monkeypatch, capsys):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    assert main(["serve-reranker", "qwen3-8b", "--devices", "1", "--dry-run"]) == 0
    assert "CUDA_VISIBLE_DEVICES=6 vllm serve" in capsys.readouterr().out
    assert main(["serve-reranker", "qwen3-8b", "--devices", "2", "--dry-run"]) == 2
    assert "leaves 2 GPU(s)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["qwen3-8b", "--dry-run"], "serve-reranker needs --devices"),
        (["qwen3-8b", "--devices", "0", "0", "--dry-run"], "--devices names a GPU twice"),
        (["qwen3-8b", "--devices", "gpu0", "--dry-run"], "'gpu0' is not a GPU index"),
        (
            ["qwen3-4b", "--devices", "0", "--dry-run"],
            "unknown local reranker 'qwen3-4b': choose from qwen3-8b, zerank-2",
        ),
    ],
)
def test_bad_arguments_are_one_line(argv, message, capsys):
    assert main(["serve-reranker", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_without_gpu_or_group_says_what_is_missing(monkeypatch, capsys):
    # as on this machine: no vLLM in the default install, no NVIDIA GPU
    monkeypatch.setattr(serving, "vllm_installed", lambda: False)
    monkeypatch.setattr(serving, "visible_gpus", lambda: [])
    monkeypatch.setattr(serving.sys, "platform", "linux")
    assert main(["serve-reranker", "qwen3-8b", "--devices", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "missing vLLM (the gpu dependency group is not installed); an NVIDIA GPU (nvidia-smi finds none)" in err
    assert "uv run --locked --group gpu evals-repro serve-reranker" in err


def test_missing_requirements_each_alone():
    commands = serving.replica_commands("qwen3-8b", ["0"])
    with pytest.raises(ConfigurationError, match=r"missing an NVIDIA GPU \(nvidia-smi finds none\)$"):
        serving.check_environment(commands, gpus=lambda: [], has_vllm=lambda: True, platform="linux")
    with pytest.raises(ConfigurationError, match=r"missing vLLM \(the gpu dependency group is not installed\)$"):
        serving.check_environment(commands, gpus=lambda: ["0"], has_vllm=lambda: False, platform="linux")
    with pytest.raises(ConfigurationError, match=r"missing Linux \(this is darwin\)"):
        serving.check_environment(commands, gpus=lambda: ["0"], has_vllm=lambda: True, platform="darwin")
    with pytest.raises(UsageError, match="no GPU 0 on this machine"):
        serving.check_environment(commands, gpus=lambda: ["1"], has_vllm=lambda: True, platform="linux")


def test_starts_waits_prints_urls_and_stops_on_ctrl_c(tmp_path, monkeypatch):
    import json

    from evals_repro.rerankers import local_models

    monkeypatch.setenv("STAND_IN_RECORD", str(tmp_path / "record"))
    # free ports instead of 8300/8301, which may be taken on a shared machine
    ports = []
    for _ in range(2):
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    spec = local_models.QWEN3_8B
    monkeypatch.setattr(serving, "get_spec", lambda name: spec)
    real = serving.replica_commands

    def commands(name, devices, host=serving.DEFAULT_HOST):
        made = real(name, devices, host)
        return [
            serving.ReplicaCommand(c.device, c.visible, host, port, (*c.argv[:-1], str(port)))
            for c, port in zip(made, ports)
        ]

    monkeypatch.setattr(serving, "replica_commands", commands)
    lines: list[str] = []
    ticks = {"n": 0}

    def sleep(seconds):  # Ctrl-C a few polls after the replicas are up
        ticks["n"] += 1
        if any(line.startswith("export ") for line in lines):
            raise KeyboardInterrupt
        import time

        time.sleep(0.1)

    code = serving.serve(
        "qwen3-8b",
        ["0", "1"],
        log_dir=tmp_path / "logs",
        echo=lines.append,
        check=lambda commands: None,
        executable=[sys.executable, str(STAND_IN)],
        sleep=sleep,
        startup_timeout=60,
    )
    assert code == 0
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    assert f"export QWEN_RERANK_URLS={','.join(urls)}" in lines
    assert all(f"qwen3-8b: ready at {u}" in lines for u in urls)
    assert lines[-1] == "qwen3-8b: stopped 2 replica(s)"
    for device, port in zip(["0", "1"], ports):
        record = json.loads((tmp_path / f"record.{port}").read_text())
        assert record["visible"] == device and record["argv"][:2] == ["serve", "Qwen/Qwen3-Reranker-8B"]
        assert "--disable-prefix-caching" in record["argv"]
        with pytest.raises(ProcessLookupError):
            os.kill(record["pid"], 0)  # stopped (and reaped)
        assert (tmp_path / "logs" / f"qwen3-8b-{port}.log").exists()


def test_a_replica_that_dies_while_loading_is_reported_with_its_log(tmp_path):
    script = tmp_path / "dies.py"
    script.write_text("import sys; print('CUDA out of memory'); sys.exit(3)\n")
    with pytest.raises(ConfigurationError) as raised:
        serving.serve(
            "zerank-2",
            ["0"],
            log_dir=tmp_path / "logs",
            echo=lambda line: None,
            check=lambda commands: None,
            executable=[sys.executable, str(script)],
            is_healthy=lambda url: False,
            poll=0.05,
        )
    assert "exited with code 3 before it was healthy (CUDA out of memory)" in raised.value.message
    assert str(tmp_path / "logs" / "zerank-2-8400.log") in raised.value.hint


def test_subprocess_helper_is_not_run_for_dry_run(monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise AssertionError("dry-run must start nothing")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    assert main(["serve-reranker", "zerank-2", "--devices", "0", "--dry-run"]) == 0
    assert capsys.readouterr().out == ZERANK.format(device=0, port=8400) + "\n"

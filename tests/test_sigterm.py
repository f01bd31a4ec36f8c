"""SIGTERM (what schedulers and `kill` send) is handled as Ctrl-C is (issue 22, item 12): the message says what
is kept, the exit code is 143, and the next run resumes where it stopped. Each command runs in a child (the
CLI's `main`, its own SIGTERM handler) and gets SIGTERM once it has finished part of its work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beir_folder import write_beir_folder
from evals_repro.base.io import read_jsonl
from evals_repro.cli import TERMINATED, main
from evals_repro.study.quality import QUALITY
from study_fixtures import copy_study, prepare_sample
from test_study import TimedCohere

RUN_CHILD = """
import sys
import scripted_method
from evals_repro.base.registry import METHODS
METHODS.register("scripted")(scripted_method.build)
scripted_method.SCRIPT.update({"q1": ["d1"]})
from evals_repro.cli import main
sys.exit(main(sys.argv[1:]))
"""
CLI_CHILD = "import sys; from evals_repro.cli import main; sys.exit(main(sys.argv[1:]))"


def terminate_when(proc, ready, timeout: float = 120.0) -> tuple[int, str]:
    """SIGTERM `proc` once `ready()` holds; its exit code and stderr."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None and not ready():
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()[1].decode()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode()


def spawn_cli(child: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
    """The CLI in a child: tests/ importable, no progress bars, `env` added."""
    full = dict(os.environ, **env, PYTHONPATH=str(Path(__file__).parent), EVALS_REPRO_NO_PROGRESS="1")
    return subprocess.Popen([sys.executable, "-c", child, *args], env=full, stderr=subprocess.PIPE)


@pytest.mark.parametrize("ceiling", [[], ["--max-cost", "1"]], ids=["plain", "max-cost"])
def test_sigterm_during_run_keeps_the_finished_subset_and_exits_143(tmp_path, capsys, registered, ceiling):
    root = tmp_path / "bench"
    for name in ("alpha", "beta"):
        write_beir_folder(root / name, {"d1": "solar power", "d2": "gardening"}, {"q1": "solar"}, [("q1", "d1", 1)])
    results = tmp_path / "results"
    args = ["run", "scripted", "-b", str(root), "--results-dir", str(results), "--cache-dir", str(tmp_path / "c")]
    args += ceiling  # under --max-cost the run works inside the ceiling's guard: SIGTERM stops it the same way
    proc = spawn_cli(RUN_CHILD, args, {"SCRIPTED_HOLD": "beta"})  # stopped inside beta, however slow
    first = results / "bench" / "scripted" / "alpha.json"
    code, err = terminate_when(proc, first.exists)
    assert code == 143, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == TERMINATED
    assert json.loads(first.read_text())["complete"] is True
    assert not (results / "bench" / "scripted" / "beta.json").exists()
    import scripted_method
    from evals_repro.base.registry import METHODS

    registered(METHODS, "scripted", scripted_method.build)
    assert main([*args, "--resume"]) == 0
    assert "alpha: complete result kept" in capsys.readouterr().err


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return prepare_sample(tmp_path_factory.mktemp("prepared"), ("heat-pumps",))


def test_sigterm_during_rerank_study_quality_keeps_every_answer_and_exits_143(prepared, tmp_path):
    study = copy_study(prepared, tmp_path)
    with TimedCohere(delay=0.1) as cohere:
        env = {"CO_API_URL": cohere.url, "CO_API_KEY": "k"}
        args = ["rerank-study", "quality", "--models", "cohere-pro", "--study-dir", str(study)]
        args += ["--cache-dir", str(tmp_path / "cache"), "--quality-workers", "1"]
        proc = spawn_cli(CLI_CHILD, args, env)
        quality = study / QUALITY
        code, err = terminate_when(proc, lambda: quality.exists() and quality.read_bytes().count(b"\n") >= 3)
        assert code == 143, err
        assert "Traceback" not in err
        assert err.strip().splitlines()[-1] == TERMINATED
        answered = len(cohere.requests)
        kept = [r for r in read_jsonl(quality) if r["status"] == "ok"]
        assert 3 <= len(kept) <= answered  # every answer that arrived before the signal was written

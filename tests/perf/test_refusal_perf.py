"""How fast and how small a refusal is (issue 22, items 7 and 9): the CLI in a fresh process, timed wall-clock,
its peak RSS read by the child itself at exit (VmHWM: the fork from pytest would inflate wait4's
ru_maxrss), each case side by side with a peer run of the same interpreter.

    flock /work/coord/perf.lock uv run pytest -m perf -s tests/perf/test_refusal_perf.py

The peer is `evals-repro --version` (interpreter + CLI start-up, nothing else), run interleaved with the
case; the median over REPEATS pairs is reported, with the ratio. Goals (absolute, as the issue states them):
a 2 GB `--run` without a newline refused in <= 1 s and <= 100 MB RSS; a missing key or a bad option in
<= 0.5 s; an offline Hub benchmark without a cache in <= 1.5 s.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.perf

REPEATS = int(os.environ.get("EVALS_REPRO_PERF_REPEATS", "5"))
CLI = (
    "import sys\nfrom evals_repro.cli import main\ntry:\n    code = main(sys.argv[1:])\nfinally:\n"
    "    peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
    "    print(f'peak-kb {peak}', file=sys.stderr)\nsys.exit(code)"
)
KEYS = ("VOYAGE_API_KEY", "COHERE_API_KEY", "CO_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "MXBAI_API_KEY")


def measure(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS in MB, exit code, stderr) of one CLI run in a fresh interpreter."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", CLI, *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert child.stderr is not None
    err = child.stderr.read().decode()
    child.wait()
    wall = time.perf_counter() - started
    peak_kb = int(err.strip().splitlines()[-1].removeprefix("peak-kb "))
    return wall, peak_kb / 1024, child.returncode, err


def side_by_side(name: str, args: list[str], cwd: Path, env: dict[str, str], code: int, expect: str):
    cases, peers, rss = [], [], []
    for round_ in range(REPEATS):
        order = [(args, cases), (["--version"], peers)]
        for run_args, into in order if round_ % 2 == 0 else order[::-1]:
            wall, peak, returned, err = measure(run_args, cwd, env)
            if into is cases:
                assert returned == code, err
                assert expect in err, err
                rss.append(peak)
            into.append(wall)
    case, peer = statistics.median(cases), statistics.median(peers)
    print(
        f"\n{name}: {case:.3f} s (peer `--version` {peer:.3f} s, ratio {case / peer:.2f}), "
        f"peak RSS {max(rss):.0f} MB, over {REPEATS} interleaved pairs"
    )
    return case, max(rss)


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEYS and not k.startswith("HF_")}
    env["EVALS_REPRO_NO_PROGRESS"] = "1"
    return env


def test_a_2gb_run_without_newlines_is_refused_fast_and_small(tmp_path):
    big = tmp_path / "big.run"
    with open(big, "wb") as handle:  # sparse: 2 GiB of NUL bytes and not one newline
        handle.truncate(2 << 30)
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    args = ["evaluate", "--qrels", "qrels.txt", "--run", str(big)]
    wall, rss = side_by_side("2 GB --run, no newline", args, tmp_path, clean_env(tmp_path), 2, "longer than 1 MiB")
    assert wall <= 1.0 and rss <= 100

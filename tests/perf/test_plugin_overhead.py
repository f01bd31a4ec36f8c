"""A plugin retriever's overhead on the sample, side by side with its peers.

The plugin: a TF-IDF retriever (numpy, hashed vocabulary) in a module of its own, installed as a
distribution (a `.dist-info` with `entry_points.txt` on sys.path, what an installer writes) under the
group `evals_repro.retrievers`, editable (so its identity digests its file, once a run); measured in a
child process (`plugin_child.py`) that finds it the way `evals-repro` does. Also printed: what digesting
a large plugin package costs (evals_repro's own, as a stand-in).

Goal (asserted): building it by name through the entry point (protocol check included) and
retrieving the sample's three subsets through the pipeline costs <= 1.05x the same object's `run`
called directly on the same loaded subsets. Also measured, and printed: a whole `evals_repro.run`
through the plugin against the same class registered as a built-in (`METHODS.register`), with a
built-in-against-built-in control beside it to show the noise floor.

Pairs run interleaved (order alternating); each side of a pair repeats its work `REPEATS` times.
Times are CPU time of the child with BLAS on one thread: on this shared machine wall time swings 3x
with the other jobs, CPU time much less (and one thread means no BLAS spinning charged to the next
call). The estimate is min(measured) / min(peer), the least disturbed sample of each, since load only
adds time; the median of the pair ratios is printed too. The one-time cost of reading the installed
entry points (once per process) is printed beside them.

    flock /work/coord/perf.lock uv run pytest -m perf -s tests/perf/test_plugin_overhead.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.perf

GOAL = 1.05
CHILD = Path(__file__).resolve().parent / "plugin_child.py"
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def shown(figures: dict[str, float]) -> str:
    return (
        f"{figures['measured'] * 1000:.1f} ms vs {figures['peer'] * 1000:.1f} ms, ratio {figures['ratio']:.3f} "
        f"(median of pairs {figures['median_ratio']:.3f})"
    )


def test_plugin_retriever_overhead_on_the_sample(tmp_path):
    env = {**os.environ, **ONE_THREAD, "EVALS_REPRO_NO_PROGRESS": "1"}
    done = subprocess.run(
        [sys.executable, str(CHILD), str(tmp_path)], capture_output=True, text=True, timeout=1800, env=env
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"\nplugin retriever on the sample (load {os.getloadavg()[0]:.2f}, CPU time, one BLAS thread):\n"
        f"  retrieval, plugin vs direct call: {shown(figures['retrieval'])}\n"
        f"  whole run, plugin vs built-in: {shown(figures['as_builtin'])}\n"
        f"  whole run, built-in vs built-in (control): {shown(figures['control'])}\n"
        f"  entry points read once per process: {figures['discovery'] * 1000:.1f} ms\n"
        f"  a package's files digested for its identity, once a run: {figures['hashing']['seconds'] * 1000:.1f} ms "
        f"CPU for {figures['hashing']['files']} files, {figures['hashing']['bytes'] / 1e6:.1f} MB"
    )
    assert figures["retrieval"]["ratio"] <= GOAL

"""What checking a component's answer (base/contracts.py) costs a run, side by side with the checks bypassed.

The measured side runs with everything on; its peer runs the same work inside `contracts.unchecked()` (the
child's `BYPASSES`: add a switch there to time another cost the same way). Workloads (contracts_child.py):
`run bm25 -b sample`, and a 100,000-page exact-search run through a Python-object embedder (the harness's
cache and exact index) and through a Python-object retriever doing its own search.

Goal (asserted): each median of interleaved pair ratios (CPU time, child process, one BLAS thread) <= 1.02.

    flock /work/coord/perf.lock uv run pytest -m perf -s tests/perf/test_contracts_perf.py

Scale: EVALS_REPRO_PERF_PAGES (100000), EVALS_REPRO_PERF_QUERIES (500), EVALS_REPRO_PERF_PAIRS (7),
EVALS_REPRO_PERF_REPEATS (3 sample runs per side of a pair).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.perf

GOAL = 1.02
CHILD = Path(__file__).resolve().parent / "contracts_child.py"
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def test_the_checks_cost_at_most_2_percent(tmp_path):
    env = {**os.environ, **ONE_THREAD, "EVALS_REPRO_NO_PROGRESS": "1"}
    done = subprocess.run(
        [sys.executable, str(CHILD), str(tmp_path)], capture_output=True, text=True, timeout=3600, env=env
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\ncontract checks, checked / bypassed (load {os.getloadavg()[0]:.2f}, CPU time, one BLAS thread):")
    for workload, row in figures.items():
        print(f"  {workload}: {row['checked']:.3f} s vs {row['peer']:.3f} s, median pair ratio {row['ratio']:.4f}")
    assert all(row["ratio"] <= GOAL for row in figures.values()), figures

"""The card's replay (`rcp replay`, `reproduce rcp-card --run`) at the release's scale stays a streaming job.

A synthetic release (rcp_release_scale.py: 14 models, 48 subsets, 302 queries a subset with 150-page pools, i.e.
2,174,400 pool pairs a model and 30.4M run rows) is replayed in a fresh process. Goals:
- peak memory: the child's peak RSS under 2 GiB (it holds one domain's runs as Arrow columns at a time);
- time linear in the pool rows: the full release against its peer, the same release with half the queries, run
  side by side in interleaved pairs (half, full, half, full, ...); the median of t(full) / t(half), divided by the
  ratio of their rows, must stay <= 1.15. t is the child's CPU time: on this shared 2-core machine wall time swings
  with the other sessions' load by more than the effect measured (wall times are printed too).

    uv run pytest -m perf -s tests/perf/test_rcp_replay_perf.py
    smaller: EVALS_REPRO_PERF_RCP_QUERIES=60 (queries a subset; 302 is the card's size)
    EVALS_REPRO_PERF_RCP_ROUNDS=3 (interleaved pairs); EVALS_REPRO_PERF_DIR=/big/disk (default: pytest's tmp dir)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import rcp_release_scale

pytestmark = pytest.mark.perf

QUERIES = int(os.environ.get("EVALS_REPRO_PERF_RCP_QUERIES", "302"))
ROUNDS = int(os.environ.get("EVALS_REPRO_PERF_RCP_ROUNDS", "3"))
MEMORY_GOAL = 2 << 30
LINEAR_GOAL = 1.15
CHILD = Path(__file__).with_name("replay_child.py")


def _replay(folder: Path) -> dict:
    env = {**os.environ, "EVALS_REPRO_NO_PROGRESS": "1"}
    done = subprocess.run(
        [sys.executable, str(CHILD), str(folder)], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_replay_of_the_full_release_streams(tmp_path):
    base = Path(os.environ["EVALS_REPRO_PERF_DIR"]) if os.environ.get("EVALS_REPRO_PERF_DIR") else tmp_path
    full, half = base / f"rcp-{QUERIES}", base / f"rcp-{QUERIES // 2}"
    rows_full = rcp_release_scale.write_release(full, QUERIES)
    rows_half = rcp_release_scale.write_release(half, QUERIES // 2)
    ratios, peaks, times = [], [], []
    for _ in range(ROUNDS):
        small, big = _replay(half), _replay(full)
        assert big["models"] == small["models"] == rcp_release_scale.MODELS
        assert big["means"] == small["means"] == rcp_release_scale.MODELS * 48 * 2  # every subset, both rules
        ratios.append(big["cpu"] / small["cpu"] / (rows_full / rows_half))
        peaks.append(big["peak_rss"])
        times.append((small, big))
    ratio, peak = statistics.median(ratios), max(peaks)
    load = os.getloadavg()[0]
    print(
        f"\nreplay of {rows_full:,} run rows ({rows_full // rcp_release_scale.MODELS:,} pool pairs a model): "
        f"{', '.join(f'{b["cpu"]:.1f}' for _, b in times)} CPU s ({', '.join(f'{b["seconds"]:.1f}' for _, b in times)} "
        f"wall); of {rows_half:,}: {', '.join(f'{s["cpu"]:.1f}' for s, _ in times)} CPU s "
        f"({', '.join(f'{s["seconds"]:.1f}' for s, _ in times)} wall); "
        f"CPU time ratio per row {ratio:.3f} (goal <= {LINEAR_GOAL}); peak RSS {peak / 2**30:.2f} GiB "
        f"(goal < 2 GiB); load {load:.1f}"
    )
    assert peak < MEMORY_GOAL
    assert ratio <= LINEAR_GOAL

"""Metrics overhead against raw pytrec_eval on the same synthetic run (CPU-time ratio, printed).

Run with `uv run pytest -m perf -s tests/perf/test_metrics_perf.py`. Our extra work per call is
the float32 rounding with the NaN check, the trec-order cut for MRR@10 and its second pass.
Goal (issue 15): harness / raw pytrec_eval <= 1.2 on both shapes; the test fails above it.
EVALS_REPRO_PERF_REPEATS (default 3) sets the repeats per side (best taken).
"""

from __future__ import annotations

import os
import random
import time

import pytest

from evals_repro import metrics as M

GOAL = 1.2
REPEATS = int(os.environ.get("EVALS_REPRO_PERF_REPEATS", "3"))
PYTREC_SPECS = {
    "ndcg_cut.1,3,5,10,20,100",
    "map",
    "map_cut.10,100",
    "recall.1,5,10,20,50,100",
    "P.1,5,10",
    "recip_rank",
}


def synthetic(n_queries: int, depth: int, seed: int = 0):
    rng = random.Random(seed)
    qrels = {f"q{i}": {f"d{rng.randrange(100_000)}": rng.choice([1, 2]) for _ in range(5)} for i in range(n_queries)}
    run = {f"q{i}": {f"d{rng.randrange(100_000)}": rng.random() for _ in range(depth)} for i in range(n_queries)}
    return qrels, run


def best_cpu_seconds(fn, repeats: int = REPEATS) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.perf
@pytest.mark.parametrize("n_queries, depth", [(2000, 100), (1000, 1000)])
def test_evaluate_overhead_against_pytrec_eval(n_queries, depth):
    import pytrec_eval

    qrels, run = synthetic(n_queries, depth)
    ours = best_cpu_seconds(lambda: M.evaluate(qrels, run, M.DEFAULT_MEASURES))
    raw = best_cpu_seconds(lambda: pytrec_eval.RelevanceEvaluator(qrels, PYTREC_SPECS).evaluate(run))
    print(
        f"\nmetrics.evaluate {n_queries}x{depth}: {ours:.3f}s, raw pytrec_eval: {raw:.3f}s, "
        f"ratio {ours / raw:.2f} (goal <= {GOAL})"
    )
    assert ours / raw <= GOAL

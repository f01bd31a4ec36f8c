"""Metrics overhead against raw pytrec_eval on the same synthetic run: CPU-time ratio, asserted <= 1.10.

Run with `flock /work/coord/perf.lock uv run pytest -m perf -s tests/perf/test_metrics_perf.py`.
Both sides score the same qrels and run in this process, with the same trec_eval measures; the
harness's per-query values must equal pytrec_eval's (MRR@10 read off recip_rank). The two run in
interleaved pairs (their order alternating, so drifting load falls on both), and the median over
REPEATS pairs of the pair's CPU-time ratio must stay within 1.10.
"""

from __future__ import annotations

import os
import random
import statistics
import time

import pytest

from evals_repro import metrics as M

GOAL = 1.10
REPEATS = int(os.environ.get("EVALS_REPRO_PERF_REPEATS", "15"))
PYTREC_SPECS = {
    "ndcg_cut.1,3,5,10,20,100",
    "map",
    "map_cut.10,100",
    "recall.1,5,10,20,50,100",
    "P.1,5,10",
    "recip_rank",
}
# our name -> pytrec_eval's key, for the identical-values check
KEYS = {
    **{f"ndcg_at_{k}": f"ndcg_cut_{k}" for k in (1, 3, 5, 10, 20, 100)},
    "map": "map",
    "map_at_10": "map_cut_10",
    "map_at_100": "map_cut_100",
    **{f"recall_at_{k}": f"recall_{k}" for k in (1, 5, 10, 20, 50, 100)},
    **{f"p_at_{k}": f"P_{k}" for k in (1, 5, 10)},
}


def synthetic(n_queries: int, depth: int, seed: int = 0):
    rng = random.Random(seed)
    qrels = {f"q{i}": {f"d{rng.randrange(100_000)}": rng.choice([1, 2]) for _ in range(5)} for i in range(n_queries)}
    run = {f"q{i}": {f"d{rng.randrange(100_000)}": rng.random() for _ in range(depth)} for i in range(n_queries)}
    return qrels, run


def cpu_seconds(fn) -> float:
    started = time.process_time()
    fn()
    return time.process_time() - started


@pytest.mark.perf
@pytest.mark.parametrize("n_queries, depth", [(2000, 100), (1000, 1000)])
def test_evaluate_overhead_against_pytrec_eval(n_queries, depth):
    import pytrec_eval

    qrels, run = synthetic(n_queries, depth)

    def ours():
        return M.evaluate(qrels, run, M.DEFAULT_MEASURES)

    def raw():
        return pytrec_eval.RelevanceEvaluator(qrels, PYTREC_SPECS).evaluate(run)

    scores, reference = ours(), raw()  # warm both (imports, caches), then check the values
    assert list(scores) == sorted(reference)
    for qid, row in scores.items():
        expected = {name: reference[qid][key] for name, key in KEYS.items()}
        rr = reference[qid]["recip_rank"]
        expected["mrr_at_10"] = rr if rr >= 0.1 else 0.0
        assert row == {name: expected[name] for name in row}, qid
    ratios, ours_times, raw_times = [], [], []
    for repeat in range(REPEATS):  # interleaved pairs, the order alternating
        pair = {}
        for side in ("ours", "raw") if repeat % 2 == 0 else ("raw", "ours"):
            pair[side] = cpu_seconds(ours if side == "ours" else raw)
        ratios.append(pair["ours"] / pair["raw"])
        ours_times.append(pair["ours"])
        raw_times.append(pair["raw"])
    ratio = statistics.median(ratios)
    print(
        f"\nmetrics.evaluate {n_queries}x{depth}: {statistics.median(ours_times):.3f}s, raw pytrec_eval: "
        f"{statistics.median(raw_times):.3f}s CPU, median ratio of {REPEATS} interleaved pairs {ratio:.3f} "
        f"(goal <= {GOAL}; load {os.getloadavg()[0]:.1f})"
    )
    assert ratio <= GOAL, f"harness scoring costs {ratio:.2f}x raw pytrec_eval (goal <= {GOAL})"

"""Bootstrap intervals against a direct NumPy computation; sampling reproducible from the seed."""

from __future__ import annotations

import numpy as np
import pytest

from evals_repro.study.sampling import allocate, sample_queries, shuffled
from evals_repro.study.stats import Cluster, bootstrap_summary, repeat_diagnostic

FIXED = {
    ("a", "q1"): [10.0, 12.0, 11.0],
    ("a", "q2"): [20.0, 18.0, 19.0],
    ("a", "q3"): [15.0, 15.5, 14.0],
    ("b", "q4"): [30.0, 28.0, 29.0],
    ("b", "q5"): [25.0, 26.0, 24.0],
}


def clusters():
    return [Cluster(s, q, tuple(v)) for (s, q), v in FIXED.items()]


def direct_bootstrap(resamples, seed):
    """Independent re-implementation: strata sorted by name, clusters by id, one generator."""
    strata = {}
    for (s, _q), v in sorted(FIXED.items()):
        strata.setdefault(s, []).append(np.array(v))
    rng = np.random.default_rng(seed)
    p95 = []
    means = []
    for _ in range(resamples):
        parts = []
        for s in sorted(strata):
            idx = rng.integers(0, len(strata[s]), size=len(strata[s]))
            parts += [strata[s][i] for i in idx]
        x = np.concatenate(parts)
        means.append(x.mean())
        p95.append(np.percentile(x, 95))
    return np.percentile(means, [2.5, 97.5]), np.percentile(p95, [2.5, 97.5])


def test_bootstrap_matches_direct_numpy():
    summary = bootstrap_summary(clusters(), resamples=500, seed=7)
    mean_ci, p95_ci = direct_bootstrap(500, 7)
    assert (summary["mean"]["low"], summary["mean"]["high"]) == pytest.approx(tuple(mean_ci))
    assert (summary["p95"]["low"], summary["p95"]["high"]) == pytest.approx(tuple(p95_ci))
    everything = np.concatenate([np.array(v) for v in FIXED.values()])
    assert summary["mean"]["estimate"] == pytest.approx(everything.mean())
    assert summary["p50"]["estimate"] == pytest.approx(np.median(everything))
    assert summary["n_queries"]["estimate"] == 5


def test_repeat_diagnostic_flags_twice_as_fast_repeats():
    fast_repeats = [Cluster("s", f"q{i}", (100.0 + i, 50.0 + i / 2, 51.0 + i / 2, 49.0)) for i in range(8)]
    verdict = repeat_diagnostic(fast_repeats, resamples=300)
    assert verdict["verdict"] == "repeat speed-up"
    assert verdict["ratio"] < 0.6 and verdict["high"] < 0.9
    steady = [Cluster("s", f"q{i}", (100.0 + i, 101.0 + i, 99.0 + i, 100.5 + i)) for i in range(8)]
    assert repeat_diagnostic(steady, resamples=300)["verdict"] == "no speed-up"
    assert repeat_diagnostic(steady[:4], resamples=300)["verdict"] == "too few pairs"


def test_repeat_diagnostic_inconclusive_when_interval_crosses():
    noisy = [Cluster("s", f"q{i}", (100.0, r)) for i, r in enumerate([60, 130, 70, 120, 85, 95, 140, 65])]
    result = repeat_diagnostic(noisy, resamples=400)
    assert result["low"] < 0.9 < result["high"]
    assert result["verdict"] == "inconclusive"


def test_allocation_is_even_with_seeded_remainder():
    assert allocate(20, {"a": 50, "b": 50, "c": 50}, seed=42) in (
        {"a": 7, "b": 7, "c": 6},
        {"a": 7, "b": 6, "c": 7},
        {"a": 6, "b": 7, "c": 7},
    )
    assert sum(allocate(20, {"a": 50, "b": 50, "c": 50}, seed=1).values()) == 20
    assert allocate(20, {"a": 2, "b": 50, "c": 50}, seed=42) == {"a": 2, "b": 9, "c": 9}
    assert allocate(20, {"a": 3, "b": 4}, seed=42) == {"a": 3, "b": 4}


def test_sampling_reproducible_from_seed():
    ids = {"a": [f"a{i:02d}" for i in range(30)], "b": [f"b{i:02d}" for i in range(12)]}
    first = sample_queries(ids, 10, seed=42)
    assert first == sample_queries(ids, 10, seed=42)
    assert sum(len(v) for v in first.values()) == 10
    assert all(len(set(v)) == len(v) and set(v) <= set(ids[k]) for k, v in first.items())
    assert first != sample_queries(ids, 10, seed=43)
    assert shuffled([1, 2, 3, 4], 42, "x") == shuffled([1, 2, 3, 4], 42, "x")

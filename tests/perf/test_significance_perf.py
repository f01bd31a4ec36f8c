"""`report --baseline` statistics at scale: 20 methods x 8 subsets x 1,000 queries, 10,000 permutations.

Run with `flock /work/coord/perf.lock uv run pytest -m perf -s tests/perf/test_significance_perf.py`.
Every method against the baseline on every subset and on the stratified average (19 x 9 = 171
comparisons, each with a 10,000-permutation randomization test, a t-test and its interval, the test
inverted at the level Holm tested it at; plus each method's 10,000-resample bootstrap interval on each
cell, as the plots draw them) must finish in <= 10 s of wall time. The peer is ranx's numba-compiled Fisher
randomization test, timed on the 8 per-subset tests of one method (each test 10,000 permutations, as
ours) and scaled to the 171 tests; the ratio is printed for the note (ranx has no stratified average
and no intervals, so the peer does less work than we do).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

from evals_repro.reporting.significance import PairedStats, Stratum, holm, holm_factors

METHODS, SUBSETS, QUERIES, PERMUTATIONS = 20, 8, 1_000, 10_000
GOAL_SECONDS = 10.0


def data() -> list[Stratum]:
    rng = np.random.default_rng(0)
    base = rng.random((SUBSETS, QUERIES))
    return [
        Stratum.from_columns(
            f"subset-{s}", [np.clip(base[s] + rng.normal(0.01 * m, 0.2, QUERIES), 0, 1) for m in range(METHODS)]
        )
        for s in range(SUBSETS)
    ]


def ours(strata: list[Stratum]) -> list[float | None]:
    stats = PairedStats(strata, permutations=PERMUTATIONS, resamples=PERMUTATIONS)
    cells = [{s: 1.0} for s in range(SUBSETS)] + [dict.fromkeys(range(SUBSETS), 1 / SUBSETS)]
    family = [(cell, m) for m in range(1, METHODS) for cell in cells]
    p = [stats.compare(cell, m, 0).p_randomization for cell, m in family]
    for (cell, m), factor in zip(family, holm_factors(p)):
        low, high = stats.shift_interval(cell, m, 0, factor)
        assert low is not None and high is not None and low <= high
    for m in range(METHODS):
        for cell in cells:
            stats.interval(cell, m)
    return holm(p)


@pytest.mark.perf
def test_twenty_methods_eight_subsets_within_ten_seconds():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from ranx.statistical_tests import fisher_randomization_test

    strata = data()
    started = time.perf_counter()
    adjusted = ours(strata)
    elapsed = time.perf_counter() - started
    assert len(adjusted) == (METHODS - 1) * (SUBSETS + 1)

    fisher_randomization_test(strata[0].scores[:, 1], strata[0].scores[:, 0], 10, 0.05, 42)  # compile first
    started = time.perf_counter()
    for s in range(SUBSETS):
        fisher_randomization_test(strata[s].scores[:, 1], strata[s].scores[:, 0], PERMUTATIONS, 0.05, 42)
    peer = (time.perf_counter() - started) / SUBSETS * (METHODS - 1) * (SUBSETS + 1)
    print(
        f"\n{METHODS} methods x {SUBSETS} subsets x {QUERIES} queries, {PERMUTATIONS} permutations and resamples: "
        f"ours {elapsed:.2f} s; ranx fisher (scaled to the same {len(adjusted)} tests, tests only) {peer:.2f} s; "
        f"ratio ours/ranx {elapsed / peer:.2f}"
    )
    assert elapsed <= GOAL_SECONDS

"""The paired statistics of `report --baseline/--compare` against hand-computed cases, scipy and ranx."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest
from scipy.stats import ttest_rel

from evals_repro.reporting.significance import PairedStats, Stratum, holm, stratified_ttest


def mc_tolerance(p: float, draws: int, other_draws: int | None = None) -> float:
    """Four Monte Carlo standard errors of an estimated p (of the difference when both sides are estimates)."""
    variance = p * (1 - p) * (1 / draws + (1 / other_draws if other_draws else 0))
    return 4 * math.sqrt(variance) + 2 / draws


def one(a, b, **kwargs) -> PairedStats:
    return PairedStats([Stratum.from_columns("s", [a, b])], **kwargs)


def test_hand_computed_case():
    """Differences 0.1, 0.2, 0.3. Randomization: of the 8 sign patterns, |sum| >= 0.6 for all + and all -,
    so the exact p is 2/8 = 0.25. t-test: mean 0.2, sd 0.1, t = 0.2 / (0.1 / sqrt 3) = 2 sqrt 3 with 2 df,
    whose two-sided p is 1 - t / sqrt(t^2 + 2) = 1 - sqrt(12 / 14)."""
    base = [0.5, 0.4, 0.2]
    better = [0.6, 0.6, 0.5]
    found = one(better, base).compare({0: 1.0}, 0, 1)
    assert found.diff == pytest.approx(0.2)
    assert found.p_randomization == pytest.approx(0.25, abs=mc_tolerance(0.25, 10_000))
    assert found.p_ttest == pytest.approx(1 - math.sqrt(12 / 14), rel=1e-12)
    assert found.queries == 3


def test_bootstrap_interval_hand_computed():
    """Differences 0 and 1: a resample's mean is 0 (p 1/4), 0.5 (1/2) or 1 (1/4), so the 2.5th and 97.5th
    percentiles are 0 and 1. Two strata of constant differences 0.1 and 0.3 weighted 1/2: every resample
    gives 0.2, so the interval is the point."""
    found = one([0.5, 1.0], [0.5, 0.0]).compare({0: 1.0}, 0, 1)
    assert (found.low, found.high) == (0.0, 1.0)
    strata = [
        Stratum.from_columns("x", [[0.4, 0.5, 0.6], [0.3, 0.4, 0.5]]),
        Stratum.from_columns("y", [[0.9, 0.8], [0.6, 0.5]]),
    ]
    found = PairedStats(strata).compare({0: 0.5, 1: 0.5}, 0, 1)
    assert found.diff == pytest.approx(0.2)
    assert found.low == pytest.approx(0.2) and found.high == pytest.approx(0.2)


def test_identical_methods_are_never_different():
    scores = [0.1, 0.7, 0.3, 0.9]
    found = one(scores, scores).compare({0: 1.0}, 0, 1)
    assert (found.diff, found.p_randomization, found.p_ttest) == (0.0, 1.0, 1.0)


@pytest.mark.parametrize("n, shift, seed", [(5, 0.0, 1), (30, 0.05, 2), (200, 0.02, 3), (1000, -0.01, 4)])
def test_t_test_is_scipy_ttest_rel(n, shift, seed):
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    b = np.clip(a + shift + rng.normal(0, 0.2, n), 0, 1)
    expected = ttest_rel(b, a)
    found = one(b, a, permutations=10, resamples=10).compare({0: 1.0}, 0, 1)
    assert found.p_ttest == pytest.approx(float(expected.pvalue), rel=1e-12, abs=1e-300)
    assert found.diff == pytest.approx(float(np.mean(b - a)), rel=1e-12)


def test_stratified_t_test_welch_satterthwaite():
    """Two strata, weights 1/2: estimate (m1 + m2) / 2, variance (v1/n1 + v2/n2) / 4, df by Satterthwaite;
    the p-value from scipy's t distribution on those hand-derived numbers."""
    from scipy.stats import t as student

    d1, d2 = np.array([0.1, 0.3, 0.2, 0.4]), np.array([-0.1, 0.05, 0.2])
    v1, v2 = d1.var(ddof=1) / 4, d2.var(ddof=1) / 3
    variance = (v1 + v2) / 4
    df = variance**2 / ((v1 / 4) ** 2 / 3 + (v2 / 4) ** 2 / 2)
    t = (d1.mean() + d2.mean()) / 2 / math.sqrt(variance)
    assert stratified_ttest([d1, d2], [0.5, 0.5]) == pytest.approx(2 * student.sf(abs(t), df), rel=1e-10)


def test_holm_hand_computed():
    """Sorted 0.01, 0.03, 0.04 times 3, 2, 1 = 0.03, 0.06, 0.04; made monotone: 0.03, 0.06, 0.06."""
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, None, 0.9]) == [pytest.approx(1.0), None, pytest.approx(1.0)]
    assert holm([]) == []


def test_same_p_every_run_and_whoever_else_is_in_the_table():
    rng = np.random.default_rng(7)
    a, b, c = rng.random(60), rng.random(60), rng.random(60)
    first = one(a, b).compare({0: 1.0}, 0, 1)
    again = one(a, b).compare({0: 1.0}, 0, 1)
    with_c = PairedStats([Stratum.from_columns("s", [c, a, b])]).compare({0: 1.0}, 1, 2)
    assert first == again == with_c
    other_seed = one(a, b, seed=43).compare({0: 1.0}, 0, 1)
    assert other_seed.p_randomization != first.p_randomization


def ranx_data(seed: int, bias: float):
    rng = random.Random(seed)
    qrels = {f"q{i}": {f"d{j}": rng.choice([1, 2]) for j in rng.sample(range(40), 4)} for i in range(80)}

    def run(boost: float) -> dict:
        return {q: {f"d{j}": rng.random() + (boost if f"d{j}" in qrels[q] else 0.0) for j in range(40)} for q in qrels}

    return qrels, run(0.2), run(0.2 + bias)


# ranx's p on these: about 0.73, 0.18, 0.089, 0.027 and 0.0013 (from small to large effects)
@pytest.mark.parametrize("seed, bias", [(7, 0.01), (5, 0.02), (6, 0.03), (8, 0.04), (1, 0.05)])
def test_against_ranx_compare(seed, bias):
    """ranx's compare() on runs made here: its Fisher randomization p within Monte Carlo tolerance, its
    paired Student t p equal; our statistics read the per-query nDCG@10 ranx computed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from ranx import Qrels, Run, compare

    qrels, run_a, run_b = ranx_data(seed, bias)
    runs = [Run(run_a, name="a"), Run(run_b, name="b")]
    fisher = compare(Qrels(qrels), runs, ["ndcg@10"], stat_test="fisher", n_permutations=10_000, max_p=0.05)
    p_fisher = fisher.comparisons[frozenset(["a", "b"])]["ndcg@10"]["p_value"]
    runs = [Run(run_a, name="a"), Run(run_b, name="b")]
    student = compare(Qrels(qrels), runs, ["ndcg@10"], stat_test="student", max_p=0.05)
    p_student = student.comparisons[frozenset(["a", "b"])]["ndcg@10"]["p_value"]
    qids = sorted(qrels)
    per_query = [[float(run.scores["ndcg@10"][q]) for q in qids] for run in runs]
    found = one(per_query[1], per_query[0]).compare({0: 1.0}, 0, 1)
    assert found.p_ttest == pytest.approx(p_student, rel=1e-9)
    assert abs(found.p_randomization - p_fisher) <= mc_tolerance(p_fisher, 10_000, 10_000)


def test_bad_engine_inputs():
    with pytest.raises(ValueError, match="different query counts"):
        Stratum.from_columns("s", [[0.1, 0.2], [0.3]])
    with pytest.raises(ValueError, match="at least 1"):
        PairedStats([], permutations=0)
    stats = PairedStats([Stratum.from_columns("s", [[0.1, 0.2], None])])
    with pytest.raises(ValueError, match="no scores"):
        stats.compare({0: 1.0}, 0, 1)


def test_randomization_p_near_the_exact_enumeration():
    """Ten paired differences; all 2^10 sign patterns enumerated here: 18 of 1,024 reach the observed
    |sum| 0.83, so the exact p is 18/1024 = 0.017578125. The sampled p (10,000 flips) lies within Monte
    Carlo tolerance; the t-test is scipy's; the percentile interval that of a 200,000-draw bootstrap made
    here (within 0.005)."""
    import itertools

    a = [0.62, 0.41, 0.90, 0.33, 0.75, 0.50, 0.58, 0.71, 0.44, 0.66]
    b = [0.55, 0.43, 0.70, 0.30, 0.61, 0.52, 0.40, 0.70, 0.38, 0.50]
    d = [x - y for x, y in zip(a, b)]
    reached = sum(
        abs(sum(s * x for s, x in zip(signs, d))) >= abs(sum(d)) - 1e-12
        for signs in itertools.product((1, -1), repeat=len(d))
    )
    assert reached == 18
    found = one(a, b).compare({0: 1.0}, 0, 1)
    assert found.p_randomization == pytest.approx(18 / 1024, abs=mc_tolerance(18 / 1024, 10_000))
    assert found.p_ttest == pytest.approx(float(ttest_rel(a, b).pvalue), rel=1e-12)
    draws = np.random.default_rng(0).integers(0, 10, size=(200_000, 10))
    low, high = np.percentile(np.asarray(d)[draws].mean(axis=1), [2.5, 97.5])
    assert found.low == pytest.approx(low, abs=0.005) and found.high == pytest.approx(high, abs=0.005)


def test_printed_score_and_difference_add_queries_as_trec_eval_does():
    """The Δ a comparison table prints and the score a plot draws are running double sums over the stratum's
    queries (trec_eval's `all` arithmetic, as every other printed mean), not NumPy's pairwise sum: on these
    nine queries the two differ in the last bit. The reference is `np.cumsum` (adds left to right)."""
    a = [0.7, 0.0, 0.5, 0.3, 0.3, 0.1, 0.8, 0.1, 0.2]
    b = [0.3, 0.4, 0.2, 0.0, 0.7, 1.0, 0.9, 0.6, 0.0]
    diff = np.asarray(a) - np.asarray(b)
    assert np.cumsum(a)[-1] / 9 == 0.33333333333333337 != np.mean(a)
    assert np.cumsum(diff)[-1] / 9 == -0.12222222222222226 != np.mean(diff)
    stats = one(a, b, permutations=99, resamples=99)
    assert stats.interval({0: 1.0}, 0).estimate == 0.33333333333333337
    assert stats.compare({0: 1.0}, 0, 1).diff == -0.12222222222222226


def test_draws_are_the_same_whatever_the_blas_threads():
    """The draws' matrix products run on one BLAS thread: with two, OpenBLAS splits the sums and the last bits
    of an interval move with the machine's cores."""
    from threadpoolctl import threadpool_limits

    from evals_repro.reporting.significance import _rng, flip_means, resample_means

    scores = np.random.default_rng(3).random((1000, 20))
    draws = {}
    for threads in (1, 2):
        with threadpool_limits(threads, user_api="blas"):
            draws[threads] = (
                flip_means(scores, 4000, _rng(42, "s", "randomization")),
                resample_means(scores, 4000, _rng(42, "s", "bootstrap")),
            )
    assert all(np.array_equal(a, b) for a, b in zip(draws[1], draws[2]))

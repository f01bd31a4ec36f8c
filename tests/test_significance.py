"""The paired statistics of `report --baseline/--compare` against hand-computed cases, scipy and ranx."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest
from scipy.stats import ttest_rel

from evals_repro.reporting.significance import (
    PairedStats,
    Stratum,
    confidence,
    holm,
    holm_factors,
    min_permutations,
    stratified_ttest,
)
from reference_stats import exact_randomization_p, reference_holm


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
    """A method's score interval (the plots' bars). Scores 0 and 1: a resample's mean is 0 (p 1/4), 0.5 (1/2) or
    1 (1/4), so the 2.5th and 97.5th percentiles are 0 and 1. Two strata of constant scores 0.5 and 0.3 weighted
    1/2: every resample gives 0.4, so the interval is the point."""
    found = one([0.0, 1.0], [0.5, 0.0]).interval({0: 1.0}, 0)
    assert (found.estimate, found.low, found.high) == (0.5, 0.0, 1.0)
    strata = [
        Stratum.from_columns("x", [[0.5, 0.5, 0.5], [0.3, 0.4, 0.5]]),
        Stratum.from_columns("y", [[0.3, 0.3], [0.6, 0.5]]),
    ]
    found = PairedStats(strata).interval({0: 0.5, 1: 0.5}, 0)
    assert found.estimate == pytest.approx(0.4)
    assert found.low == pytest.approx(0.4) and found.high == pytest.approx(0.4)


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
    Carlo tolerance; the t-test is scipy's."""
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


# -- the interval of a difference: the randomization test inverted at Holm's level --------------------------------


def test_holm_factors_hand_computed():
    """p 0.01, 0.04, 0.03: 0.01 x 3 = 0.03 is rejected, 0.03 x 2 = 0.06 is not, so Holm stops at its second
    step: the first is tested at 0.05 / 3, the other two at the step where it stopped, 0.05 / 2. p 0.001, 0.01,
    0.02, 0.5: 0.004, 0.03, 0.04 rejected, 0.5 x 1 not: 4, 3, 2 and m - r = 1."""
    assert holm_factors([0.01, 0.04, 0.03]) == [3, 2, 2]
    assert holm_factors([0.5, 0.02, 0.01, 0.001]) == [1, 2, 3, 4]
    assert holm_factors([0.2, 0.3]) == [2, 2]  # none rejected: all at Bonferroni's 0.05 / 2
    assert holm_factors([]) == []
    assert (confidence(1), confidence(2), confidence(4), confidence(9)) == ("95%", "97.5%", "98.75%", "99.44%")


def test_min_permutations_is_the_fewest_that_reach_p_below_005_after_holm():
    """The smallest randomization p is 1 / (1 + B); Holm multiplies it by m. m = 1: B = 20 gives 1/21 = 0.0476,
    B = 19 gives 1/20 = 0.05 (not below). m = 8: 8/161 = 0.0497 against 8/160 = 0.05. m = 27: 540."""
    assert [min_permutations(m) for m in (1, 2, 8, 27, 171)] == [20, 40, 160, 540, 3420]
    for m in (1, 3, 8, 27):
        fewest = min_permutations(m)
        assert m / (fewest + 1) < 0.05 <= m / fewest
        assert reference_holm([1 / (fewest + 1)] * m)[0] < 0.05 <= reference_holm([1 / fewest] * m)[0]


def test_interval_of_constant_differences_hand_computed():
    """Seven differences of 0.1: shifted by any d other than 0.1, only the two sign patterns with every sign alike
    reach the observed |sum|, so p(d) = 2/128 = 0.0156 (and p(0.1) = 1). At 0.05 and 0.025 (Holm factors 1, 2)
    every other shift is rejected: the interval is the point 0.1 and excludes 0; at 0.0125 (factor 4) none is:
    it is the whole line, and contains 0 as p(0) = 0.0156 >= 0.0125 says."""
    stats = one([0.6] * 7, [0.5] * 7, permutations=100_000)
    assert stats.compare({0: 1.0}, 0, 1).p_randomization == pytest.approx(1 / 64, abs=mc_tolerance(1 / 64, 100_000))
    for factor in (1, 2):
        low, high = stats.shift_interval({0: 1.0}, 0, 1, factor)
        assert low == pytest.approx(0.1, abs=1e-12) and high == pytest.approx(0.1, abs=1e-12)
    assert stats.shift_interval({0: 1.0}, 0, 1, 4) == (-math.inf, math.inf)
    assert one([0.6], [0.5]).shift_interval({0: 1.0}, 0, 1) == (None, None)  # one query: nothing to flip


@pytest.mark.parametrize("factor", [1, 3, 8])
def test_interval_inverts_the_exact_randomization_test(factor):
    """Twelve differences (ties and zeros among them); all 2^12 sign patterns enumerated here at each shift. Just
    inside each bound the exact p of the shifted differences is at least 0.05 / factor, just outside at most
    (within Monte Carlo tolerance of 20,000 flips), and the interval holds 0 exactly when the sampled p does."""
    d = [0.12, 0.30, -0.05, 0.0, 0.21, 0.12, -0.10, 0.0, 0.33, 0.05, 0.18, -0.02]
    base = [0.4] * len(d)
    stats = one([b + x for b, x in zip(base, d)], base, permutations=20_000)
    differences = [x + b - b for x, b in zip(d, base)]
    level = 0.05 / factor
    low, high = stats.shift_interval({0: 1.0}, 0, 1, factor)
    tolerance = mc_tolerance(level, 20_000)
    step = 1e-6
    for bound, inward in ((low, step), (high, -step)):
        assert exact_randomization_p([x - (bound + inward) for x in differences]) >= level - tolerance
        assert exact_randomization_p([x - (bound - inward) for x in differences]) <= level + tolerance
    p = stats.compare({0: 1.0}, 0, 1).p_randomization
    assert (low <= 0 <= high) == (min(1.0, factor * p) >= 0.05)


@pytest.mark.parametrize("seed", range(6))
def test_interval_and_marker_always_agree(seed):
    """Many comparisons on coarse scores (multiples of 0.1: ties and zero differences everywhere), one stratum and
    stratified: after Holm, an interval excludes 0 exactly when the adjusted p is below 0.05, whatever the data."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 40))
    columns = [np.round(np.clip(rng.random(n) + shift, 0, 1), 1) for shift in (0.0, 0.05, 0.1, 0.2, -0.1)]
    halves = [
        Stratum.from_columns("x", [c[: n // 2] for c in columns]),
        Stratum.from_columns("y", [c[n // 2 :] for c in columns]),
    ]
    stats = PairedStats(halves, permutations=2_000)
    cells = [{0: 1.0}, {1: 1.0}, {0: 0.5, 1: 0.5}]
    pairs = [(a, 0) for a in range(1, 5)] + [(4, 3), (2, 1)]
    family = [(w, a, b) for w in cells for a, b in pairs]
    p = [stats.compare(w, a, b).p_randomization for w, a, b in family]
    adjusted, factors = holm(p), holm_factors(p)
    assert any(value < 0.05 for value in adjusted) or seed > 2  # the first seeds have significant differences
    for (w, a, b), p_adjusted, factor in zip(family, adjusted, factors):
        low, high = stats.shift_interval(w, a, b, factor)
        assert (low > 0 or high < 0) == (p_adjusted < 0.05), (w, a, b, low, high, p_adjusted)


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


@pytest.mark.parametrize("seed", range(40))
def test_coin_flips_are_numpys_integers_draws(seed):
    """`CoinFlips` reads the sign flips from the raw 64-bit stream; they must be the draws NumPy's
    `integers(0, 2, size, dtype=np.uint8)` gives, call after call, on shapes of every size mod 8 (a byte count
    that leaves a 32-bit word part-used, or a 64-bit output half-used, carries over to the next call)."""
    from evals_repro.reporting.significance import CoinFlips

    shapes = np.random.default_rng(1000 + seed).integers(1, 23, size=(5, 2))
    reference, ours = np.random.default_rng(seed), np.random.default_rng(seed)
    flips = CoinFlips(ours)
    for shape in map(tuple, shapes.tolist()):
        out = np.empty(shape)
        flips.fill(out)
        assert np.array_equal(out, reference.integers(0, 2, size=shape, dtype=np.uint8)), shape


def test_flip_means_are_the_sign_flipped_means_of_numpys_draws():
    """Each draw's mean of sign-flipped scores, for the generator's `integers(0, 2)` draws in the engine's
    chunks (1,000 queries: 2,000 draws a product, the last one short), computed here one draw at a time."""
    from evals_repro.reporting.significance import CHUNK, _rng, flip_means

    scores = np.random.default_rng(5).random((1000, 3))
    found = flip_means(scores, 4501, _rng(42, "s", "randomization"))
    reference = _rng(42, "s", "randomization")
    signs = np.concatenate(
        [reference.integers(0, 2, size=(min(CHUNK, 4501 - start), 1000), dtype=np.uint8) for start in (0, 2000, 4000)]
    )
    expected = np.array([(np.where(row == 1, 1.0, -1.0) @ scores) / 1000 for row in signs])
    assert found.shape == (4501, 3)
    assert np.allclose(found, expected, rtol=0, atol=1e-15)

"""Paired comparisons on the same queries: mean differences, bootstrap intervals, p-values, Holm.

Every score a report tables is a weighted sum of stratum means: a subset's score is the mean over
its queries (one stratum), a crosslingual score the mean of its per-language means (a stratum per
language), a benchmark average the mean of its subset scores. The difference between two methods
is the same weighted sum over per-query differences, so resampling and sign flipping are linear in
the per-query score matrix: one matrix product per stratum gives the draws of every method at once,
and every pair and every cell that reads the stratum shares them.

- Bootstrap: queries resampled with replacement within each stratum (stratified by subset, and by
  language in crosslingual cells); percentile interval of a method's score over `resamples` draws (plots).
- Randomization test, paired and two-sided: each query's two scores are swapped with probability
  1/2 (its difference's sign flipped); p = (1 + #{|T*| >= |T|}) / (1 + permutations).
- The interval of a difference inverts that test on the same draws: the shifts d for which "a - b - d is
  symmetric about 0" is not rejected at the level Holm's step-down tests the comparison at (`holm_factors`),
  so it excludes 0 exactly when the comparison is significant after adjustment: never a contradiction
  between an interval and a marker.
- Paired t-test: on one stratum `scipy.stats.ttest_rel` (to a relative 2e-13: the t tail is computed here,
  `student_t.py`); over several, the weighted mean over its stratified standard error, with Welch-Satterthwaite
  degrees of freedom.
- Holm-Bonferroni over a family of p-values.

Draws come from `numpy.random.default_rng` seeded with (seed, stratum name), so a p-value depends
on the data, the seed and the number of draws only: the same on every run, whichever other methods
or subsets share the table.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..metrics.protocol import running_mean

DEFAULT_PERMUTATIONS = 10_000
DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 42
ALPHA = 0.05
CHUNK = 2_000  # draws per matrix product at most ...
CHUNK_CELLS = 4_000_000  # ... and at most this many draw x query cells (32 MB of floats) per product
# |T*| >= |T| up to rounding: the sign patterns that give the observed sum again must count.
TIE_TOLERANCE = 1e-9


BETTER, WORSE = "▲", "▼"  # the markers of a significant difference in every table


def verdict(diff: float, p_adjusted: float | None) -> str:
    """ "better" / "worse" (higher is better) at ALPHA after adjustment, else ""."""
    if p_adjusted is None or p_adjusted >= ALPHA or diff == 0:
        return ""
    return "better" if diff > 0 else "worse"


def x100(value: float | None, decimals: int = 1, sign: bool = False) -> str:
    """A score or difference as the tables print it: x100, signed for differences; "" when missing."""
    if value is None:
        return ""
    return f"{value * 100:+.{decimals}f}" if sign else f"{value * 100:.{decimals}f}"


def difference_cells(
    diff: float | None, low: float | None, high: float | None, verdict: str, decimals: int = 1
) -> tuple[str, str]:
    """A comparison's difference cell (with its marker) and interval cell, alike in report and study tables."""
    marker = {"better": f" {BETTER}", "worse": f" {WORSE}"}.get(verdict, "")
    interval = "" if low is None else f"[{x100(low, decimals, True)}, {x100(high, decimals, True)}]"
    return x100(diff, decimals, True) + marker, interval


def format_p(p: float | None) -> str:
    """A p-value as the tables print it."""
    if p is None:
        return ""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


@dataclass(frozen=True)
class Stratum:
    """Per-query scores of one stratum: rows are queries (one fixed order), columns methods.

    `present[j]` is False for a method without scores here (its column is ignored)."""

    name: str
    scores: np.ndarray
    present: np.ndarray

    @classmethod
    def from_columns(cls, name: str, columns: Sequence[Sequence[float] | None]) -> Stratum:
        """Columns of equal length (one per method, in the engine's method order; None = absent)."""
        lengths = {len(c) for c in columns if c is not None}
        if len(lengths) > 1:
            raise ValueError(f"stratum {name}: methods have different query counts {sorted(lengths)}")
        n = lengths.pop() if lengths else 0
        scores = np.zeros((n, len(columns)))
        for j, column in enumerate(columns):
            if column is not None:
                scores[:, j] = np.asarray(column, dtype=float)
        return cls(name, scores, np.array([c is not None for c in columns], dtype=bool))


@dataclass(frozen=True)
class PairResult:
    diff: float  # weighted mean of a - b
    p_randomization: float
    p_ttest: float | None  # None: a stratum has fewer than 2 queries
    queries: int


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float | None
    high: float | None


def check_permutations(permutations: int) -> None:
    """`--permutations` below 1 is refused in one line (a test with no draws has no p-value)."""
    if permutations < 1:
        from ..base.errors import UsageError

        raise UsageError(
            f"--permutations {permutations} must be at least 1",
            f"use the default {DEFAULT_PERMUTATIONS} (p-values below 0.05 need well over 100)",
        )


def min_permutations(comparisons: int) -> int:
    """The fewest permutations with which a family of `comparisons` can show a difference at p < ALPHA after
    Holm's adjustment. The smallest p a randomization test gives is 1 / (1 + B), and Holm multiplies the
    smallest by the family's size m, so m / (1 + B) < ALPHA, i.e. B > m / ALPHA - 1: B = floor(m / ALPHA)
    (exact arithmetic: 20 m at ALPHA 0.05)."""
    from fractions import Fraction

    return math.floor(comparisons / Fraction(str(ALPHA)))


def check_family(permutations: int, comparisons: int, family: str) -> None:
    """Refuse a number of permutations with which no comparison of the family could be significant: every
    marker would be absent whatever the data, and read as "no difference"."""
    needed = min_permutations(comparisons)
    if comparisons and permutations < needed:
        from ..base.errors import UsageError

        raise UsageError(
            f"--permutations {permutations} cannot show any difference at p < {ALPHA} after Holm's adjustment over "
            f"the {comparisons} comparisons of {family}: the smallest p it can give, 1/{permutations + 1}, times "
            f"{comparisons} is {comparisons / (permutations + 1):.3g}",
            f"use --permutations {needed} or more ({comparisons} comparisons / {ALPHA}; more permutations give the "
            f"test more power: the default is {DEFAULT_PERMUTATIONS:,})",
        )


def holm_factors(pvalues: Sequence[float], alpha: float = ALPHA) -> list[int]:
    """The multiplier of each p in Holm's step-down at `alpha`: m - k + 1 for the k-th smallest while every
    smaller one was rejected, then m - r (the step where it stopped, r rejected) for all the rest. A comparison's
    interval is the test's inversion at alpha / factor, so it excludes 0 exactly when `holm` is below alpha.
    Ranks and arithmetic are `holm`'s (ties by position)."""
    ranked = sorted((p, i) for i, p in enumerate(pvalues))
    factors = [0] * len(pvalues)
    running, rejected = 0.0, 0
    for rank, (p, i) in enumerate(ranked):
        running = max(running, min(1.0, (len(ranked) - rank) * p))
        if running >= alpha:
            break
        factors[i] = len(ranked) - rank
        rejected += 1
    for _, i in ranked[rejected:]:
        factors[i] = len(ranked) - rejected
    return factors


def confidence(factor: int, alpha: float = ALPHA) -> str:
    """The confidence of an interval tested at alpha / factor, as the tables print it ("95%", "99.44%")."""
    return f"{100 * (1 - alpha / factor):.4g}%"


class HolmTested:
    """What a tested difference shows (a report's or the study's comparison): its marker and its interval's
    confidence, from its `diff`, Holm-adjusted `p_adjusted` and Holm `factor`."""

    diff: float
    p_adjusted: float | None
    factor: int

    @property
    def verdict(self) -> str:
        """better / worse than what it is compared with at ALPHA after adjustment (randomization test), else ''."""
        return verdict(self.diff, self.p_adjusted)

    @property
    def level(self) -> str:
        return confidence(self.factor)


def check_seed(seed: int) -> None:
    """`--seed` must be a whole number of at least 0 (NumPy's SeedSequence takes no negative entropy)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        from ..base.errors import UsageError

        raise UsageError(
            f"--seed {seed} must be a whole number of at least 0",
            f"use the default {DEFAULT_SEED}, or any other whole number >= 0 (the same seed gives the same p-values)",
        )


def _rng(seed: int, name: str, purpose: str) -> np.random.Generator:
    """A generator fixed by (seed, stratum name, purpose): never by call order."""
    words = np.frombuffer(hashlib.sha256(f"{name}\0{purpose}".encode()).digest()[:16], dtype=np.uint32)
    return np.random.default_rng(np.random.SeedSequence([seed, *(int(w) for w in words)]))


@functools.cache
def _blas():
    """The process's BLAS thread pools (found once)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread():
    """The draws' products are small (2,000 draws x 1,000 queries by 1,000 x methods): one BLAS thread does
    them as fast as several, at a fraction of the CPU (idle threads spin), and sums in the same order on every
    machine whatever its number of cores, so the intervals do not move in their last bits from one to another."""
    return _blas().limit(limits=1, user_api="blas")


def flip_means(scores: np.ndarray, permutations: int, rng: np.random.Generator) -> np.ndarray:
    """(permutations, methods): each draw's mean of sign-flipped scores (one sign per query, shared by
    all methods, so that column a minus column b is the draw of the paired difference a - b)."""
    with one_blas_thread():
        return _flip_means(scores, permutations, rng)


class CoinFlips:
    """The draws of `rng.integers(0, 2, size, dtype=np.uint8)` call after call, as 0.0 / 1.0, at a fifth of the CPU.

    NumPy draws each of those from a byte of its 32-bit stream: Lemire's bounded method keeps a byte's top bit
    ((byte * 2) >> 8; it never rejects at range 2), four bytes from each 32-bit word, low byte first, each call
    starting a fresh word (the rest of its last word dropped). PCG64 gives its 32-bit words as the low then the high
    half of each 64-bit output, the high half kept for the next call. So the same bits come from the raw 64-bit
    outputs read as little-endian bytes, with that last half carried here; tests/test_significance.py holds this
    against `integers` itself, whose stream NumPy may change between versions (a failing test then says so)."""

    def __init__(self, rng: np.random.Generator):
        self._source = rng.bit_generator
        self._pending = np.empty(0, dtype="<u4")  # the high half of an output whose low half was used

    def fill(self, out: np.ndarray) -> None:
        """Fill `out` (float64, C-contiguous) with the next out.size draws."""
        count = out.size
        words = -(-count // 4)
        carried, self._pending = self._pending[:words], self._pending[words:]
        needed = words - len(carried)
        halves = self._source.random_raw(-(-needed // 2)).astype("<u8", copy=False).view("<u4")
        if needed % 2:
            halves, self._pending = halves[:-1], halves[-1:]
        stream = np.concatenate([carried, halves]) if len(carried) else halves
        np.greater_equal(stream.view(np.uint8)[:count].reshape(out.shape), 128, out=out, casting="unsafe")


def _flip_means(scores: np.ndarray, permutations: int, rng: np.random.Generator) -> np.ndarray:
    n, m = scores.shape
    out = np.empty((permutations, m))
    total = scores.sum(axis=0)
    step = max(1, min(CHUNK, CHUNK_CELLS // max(1, n)))
    bits = np.empty((min(step, permutations), n))  # one buffer for every chunk: no fresh 16 MB per product
    flips = CoinFlips(rng)  # the draws of rng.integers(0, 2, size=(rows, n), dtype=np.uint8), chunk after chunk
    for start in range(0, permutations, step):
        rows = min(step, permutations - start)
        flips.fill(bits[:rows])
        draws = out[start : start + rows]
        np.matmul(bits[:rows], scores, out=draws)
        draws *= 2.0  # sum of (+x | -x) = 2 * sum(+) - total
        draws -= total
        draws /= n
    return out


def resample_means(scores: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(resamples, methods): each draw's mean over queries resampled with replacement (paired: one
    draw of queries shared by all methods)."""
    with one_blas_thread():
        return _resample_means(scores, resamples, rng)


def _resample_means(scores: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    n, m = scores.shape
    out = np.empty((resamples, m))
    step = max(1, min(CHUNK, CHUNK_CELLS // max(1, n)))
    counts = np.empty((min(step, resamples), n))  # one buffer for every chunk: no fresh 16 MB per product
    offsets = (np.arange(len(counts)) * n)[:, None]
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        picks = rng.integers(0, n, size=(rows, n))
        picks += offsets[:rows]
        np.copyto(counts[:rows], np.bincount(picks.ravel(), minlength=rows * n).reshape(rows, n))
        draws = out[start : start + rows]
        np.matmul(counts[:rows], scores, out=draws)
        draws /= n
    return out


class PairedStats:
    """Draws per stratum, computed once on first use and shared by every comparison that reads it."""

    def __init__(
        self,
        strata: Sequence[Stratum],
        permutations: int = DEFAULT_PERMUTATIONS,
        resamples: int = DEFAULT_RESAMPLES,
        seed: int = DEFAULT_SEED,
        confidence: float = 0.95,
    ):
        if permutations < 1 or resamples < 1:
            raise ValueError("permutations and resamples must be at least 1")
        self.strata = list(strata)
        self.permutations, self.resamples, self.seed, self.confidence = permutations, resamples, seed, confidence
        self._flips: dict[int, np.ndarray] = {}
        self._boot: dict[int, np.ndarray] = {}

    def _flip(self, s: int) -> np.ndarray:
        """(permutations, methods + 1): each draw's sign-flipped means, then the mean of its signs (the last
        column: what a shift of the difference moves the draw by, `shift_interval`)."""
        if s not in self._flips:
            st = self.strata[s]
            with_ones = np.column_stack([st.scores, np.ones(st.scores.shape[0])])
            self._flips[s] = flip_means(with_ones, self.permutations, _rng(self.seed, st.name, "randomization"))
        return self._flips[s]

    def _resampled(self, s: int) -> np.ndarray:
        if s not in self._boot:
            st = self.strata[s]
            self._boot[s] = resample_means(st.scores, self.resamples, _rng(self.seed, st.name, "bootstrap"))
        return self._boot[s]

    def _check(self, weights: Mapping[int, float], methods: Sequence[int]) -> None:
        for s in weights:
            st = self.strata[s]
            if st.scores.shape[0] == 0:
                raise ValueError(f"stratum {st.name} has no queries")
            missing = [j for j in methods if not st.present[j]]
            if missing:
                raise ValueError(f"stratum {st.name} has no scores for method column(s) {missing}")

    def _percentiles(self, draws: np.ndarray, weights: Mapping[int, float]) -> tuple[float | None, float | None]:
        if all(self.strata[s].scores.shape[0] < 2 for s in weights):  # every draw is the data itself
            return None, None
        tail = (1 - self.confidence) / 2 * 100
        low, high = np.percentile(draws, [tail, 100 - tail])
        return float(low), float(high)

    def interval(self, weights: Mapping[int, float], method: int) -> Interval:
        """A method's weighted score with its stratified bootstrap interval."""
        self._check(weights, [method])
        # A stratum's mean as the report prints it: trec_eval's running sum (queries in id order), not NumPy's pairwise one.
        estimate = sum(w * running_mean(self.strata[s].scores[:, method].tolist()) for s, w in weights.items())
        draws = sum(w * self._resampled(s)[:, method] for s, w in weights.items())
        return Interval(estimate, *self._percentiles(np.asarray(draws), weights))

    def _differences(self, weights: Mapping[int, float], a: int, b: int) -> tuple[float, np.ndarray]:
        """The observed difference and its draws under sign flipping (one pair of arrays for p and interval)."""
        observed = sum(w * running_mean((self.strata[s].scores[:, a] - self.strata[s].scores[:, b]).tolist())
                       for s, w in weights.items())  # fmt: skip
        flipped = sum(w * (self._flip(s)[:, a] - self._flip(s)[:, b]) for s, w in weights.items())
        return observed, np.asarray(flipped)

    def _count(self, observed: float, flipped: np.ndarray) -> int:
        """Draws at least as extreme as `observed` (up to rounding: sign patterns that give it again count)."""
        extreme = np.abs(flipped) >= abs(observed) - TIE_TOLERANCE * max(1.0, abs(observed))
        return int(np.count_nonzero(extreme))

    def compare(self, weights: Mapping[int, float], a: int, b: int) -> PairResult:
        """Method a against method b on the cell sum_s weights[s] * mean over stratum s."""
        self._check(weights, [a, b])
        diffs = {s: self.strata[s].scores[:, a] - self.strata[s].scores[:, b] for s in weights}
        observed, flipped = self._differences(weights, a, b)
        return PairResult(
            diff=observed,
            p_randomization=(1 + self._count(observed, flipped)) / (1 + self.permutations),
            p_ttest=stratified_ttest([diffs[s] for s in weights], list(weights.values())),
            queries=sum(len(d) for d in diffs.values()),
        )

    def shift_interval(
        self, weights: Mapping[int, float], a: int, b: int, factor: int = 1, alpha: float = ALPHA
    ) -> tuple[float | None, float | None]:
        """The interval of a - b by inverting the randomization test on the same draws: every shift d for which
        the test of "a - b - d is symmetric about 0" gives min(1, factor * p) >= alpha (`factor`: Holm's
        multiplier of this comparison, `holm_factors`). It contains 0 exactly when min(1, factor * p) >= alpha
        for this comparison's own p; a bound the test can never reject is infinite (too few queries for the
        level). (None, None) when no stratum has two queries (nothing to draw, as for the bootstrap).

        At shift d a draw's statistic is A - d S (A its difference, S the weighted mean of its signs) against
        the observed T - d W (W the weights' sum, 1 in a report's cells), and |A - d S| >= |T - d W| holds on
        the closed interval between (T - A) / (W - S) and (T + A) / (W + S), which contains T / W. So the count
        of extreme draws falls monotonically on each side, and each bound is an order statistic of those ends."""
        self._check(weights, [a, b])
        if all(self.strata[s].scores.shape[0] < 2 for s in weights):
            return None, None
        observed, flipped = self._differences(weights, a, b)
        signs = np.asarray(sum(w * self._flip(s)[:, -1] for s, w in weights.items()))
        total_weight = sum(weights.values())
        centre = observed / total_weight
        draws = 1 + self.permutations

        def accepted(count: int) -> bool:  # `holm`'s arithmetic at this comparison's step
            return min(1.0, factor * ((1 + count) / draws)) >= alpha

        needed = max(0, math.ceil(alpha * draws / factor) - 1)
        while needed > 0 and accepted(needed - 1):
            needed -= 1
        while not accepted(needed):  # accepted(permutations) holds: p = 1
            needed += 1
        if needed == 0:
            return -math.inf, math.inf
        same = np.abs(signs) >= total_weight * (1 - 1e-12)  # every sign one way: the observed data at any shift
        with np.errstate(divide="ignore", invalid="ignore"):
            first = (observed - flipped) / (total_weight - signs)
            second = (observed + flipped) / (total_weight + signs)
        ends_low = np.sort(np.where(same, -np.inf, np.minimum(first, second)))
        ends_high = np.sort(np.where(same, np.inf, np.maximum(first, second)))
        low = min(float(ends_low[needed - 1]), centre)
        high = max(float(ends_high[-needed]), centre)
        # A draw that gives the observed |T| again (a query with no difference flipped) has an end within
        # rounding of 0: the decision at 0 is the test's own, tolerance and all, as the marker's.
        at_zero = accepted(self._count(observed, flipped))
        if at_zero and not low <= 0.0 <= high:
            low, high = min(low, 0.0), max(high, 0.0)
        elif not at_zero and low <= 0.0 <= high:
            inner, outer = centre, 0.0  # accepted, rejected: the bound lies strictly between them
            while True:
                middle = (inner + outer) / 2
                if middle in (inner, outer):
                    break
                shifted = self._count(observed - middle * total_weight, flipped - middle * signs)
                inner, outer = (middle, outer) if accepted(shifted) else (inner, middle)
            low, high = (inner, high) if centre > 0 else (low, inner)
        return low, high


def stratified_ttest(diffs: Sequence[np.ndarray], weights: Sequence[float]) -> float | None:
    """Two-sided p of a paired t-test on sum_s w_s * mean(d_s); one stratum: scipy's ttest_rel (to a relative 2e-13:
    the t distribution's tail is `student_t.two_sided_p`, which spares the report importing scipy)."""
    from .student_t import two_sided_p

    if any(len(d) < 2 for d in diffs):
        return None
    estimate = sum(w * float(np.mean(d)) for d, w in zip(diffs, weights))
    parts = [w * w * float(np.var(d, ddof=1)) / len(d) for d, w in zip(diffs, weights)]
    variance = sum(parts)
    if variance == 0.0:
        return 1.0 if estimate == 0.0 else 0.0
    if len(diffs) == 1:
        df = float(len(diffs[0]) - 1)
    else:  # Welch-Satterthwaite
        df = variance**2 / sum(part**2 / (len(d) - 1) for part, d in zip(parts, diffs))
    return two_sided_p(estimate / math.sqrt(variance), df)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1); None stays None."""
    ranked = sorted((p, i) for i, p in enumerate(pvalues) if p is not None and not math.isnan(p))
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(ranked):
        running = max(running, min(1.0, (len(ranked) - rank) * p))
        adjusted[i] = running
    return adjusted

"""Student's t distribution's two-sided tail, P(|T| >= |t|), in the standard library alone.

The paired t-test needs this one number; importing scipy.special for it costs a third of a second of CPU
(scipy.linalg and the array-API layer come with it), a tenth of `report --baseline`. It agrees with
`2 * scipy.special.stdtr(df, -|t|)` to a relative 2e-13 for |t| < 30 (beyond, each unit in t's last place moves
the tail by about t^2 units in its own, in scipy as here), so the p-values printed to 3 decimals or 6 significant
digits are scipy's; tests/test_student_t.py holds it against scipy and closed forms.

With x = df / (df + t^2), the tail is the regularized incomplete beta function I_x(df/2, 1/2) (DLMF 8.17.2;
Abramowitz & Stegun 26.5.27 / 26.7.1). It is evaluated by its continued fraction (DLMF 8.17.22) with the modified
Lentz method where that converges fast, x < (a + 1) / (a + b + 2), else as 1 - I_{1-x}(b, a) (DLMF 8.17.4), whose
fraction converges there. Near x = 1 a step of the fraction can lose a factor df / (1 + t^2) to cancellation, and
at large df each step changes it little: it runs in decimal arithmetic with digits and a stop that grow with df
(at most about 200 steps). The prefactor x^a (1 - x)^b / (a B(a, b)) is taken in logarithms, with
log B(a, 1/2) = log Gamma(1/2) - (log Gamma(a + 1/2) - log Gamma(a)): that difference from Stirling's series
(DLMF 5.11.1) for a >= 10 and the recurrence Gamma(z + 1) = z Gamma(z) below, never as a difference of two
large lgamma values (which is 7e-13 off at a = 1,000)."""

from __future__ import annotations

import math
import sys
from decimal import Decimal, localcontext

# Stirling's series for log Gamma(z): (z - 1/2) log z - z + log(2 pi) / 2 + sum_k B_2k / (2k (2k - 1) z^(2k - 1)),
# the coefficients B_2k / (2k (2k - 1)) for k = 1..8 (B_2 = 1/6, B_4 = -1/30, B_6 = 1/42, B_8 = -1/30,
# B_10 = 5/66, B_12 = -691/2730, B_14 = 7/6, B_16 = -3617/510). At z >= 10 the first term left out is below 1e-19.
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400)
_STIRLING_FROM = 10.0
_HALF_LOG_PI = 0.5 * math.log(math.pi)  # log Gamma(1/2)
_DIGITS = 28  # decimal digits of the fraction's arithmetic, plus 2 per power of 10 of the degrees of freedom
_STOP = 18  # it stops when a step changes it by less than 10^-(_STOP + log10(df)), relative
_TINY = Decimal("1e-300")  # Lentz's guard against a zero denominator
_MAX_STEPS = 50_000
# A tail below the smallest normal double is 0: a subnormal keeps few of its digits (about 4 at 4e-320), and the
# CSV's 6 significant digits would print noise. scipy's stdtr gives 0 from about 3e-311 down.
_SMALLEST = sys.float_info.min


def _stirling_tail(z: float) -> float:
    return sum(c / z ** (2 * k + 1) for k, c in enumerate(_STIRLING))


def log_gamma_ratio(a: float) -> float:
    """log Gamma(a + 1/2) - log Gamma(a), for a > 0, to a few units in the last place."""
    shift = 0.0  # Gamma(a + 1/2) / Gamma(a) = Gamma(a + 1 + 1/2) / Gamma(a + 1) * a / (a + 1/2)
    while a < _STIRLING_FROM:
        shift -= math.log1p(0.5 / a)
        a += 1.0
    # Stirling at a + 1/2 minus Stirling at a: (a log(a + 1/2) - a - 1/2) - ((a - 1/2) log a - a) + tails
    return shift + 0.5 * math.log(a) + (a * math.log1p(0.5 / a) - 0.5) + (_stirling_tail(a + 0.5) - _stirling_tail(a))


def _fraction(a: Decimal, b: Decimal, x: Decimal, epsilon: Decimal) -> Decimal:
    """The continued fraction 1 / (1 + d1 / (1 + d2 / (1 + ...))) of I_x(a, b) (DLMF 8.17.22), by the modified
    Lentz method, two steps a turn: d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)), then
    d_{2m+2} = (m + 1)(b - m - 1) x / ((a + 2m + 1)(a + 2m + 2))."""
    one = Decimal(1)
    c, d, f = one, Decimal(0), one
    for m in range(_MAX_STEPS):
        low = a + 2 * m  # a + 2m
        for term in (
            -(a + m) * (a + b + m) * x / (low * (low + 1)),
            (m + 1) * (b - m - 1) * x / ((low + 1) * (low + 2)),
        ):
            d = one + term * d
            d = one / (d if abs(d) > _TINY else _TINY)
            c = one + term / c
            if abs(c) < _TINY:
                c = _TINY
            step = c * d
            f *= step
            if abs(step - one) < epsilon:
                return one / f
    raise ArithmeticError(f"the t distribution's continued fraction did not converge (a={a}, b={b}, x={x})")


def two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for T Student-t with `df` > 0 degrees of freedom (NaN in, NaN out; df = inf: the normal)."""
    if math.isnan(t) or math.isnan(df):
        return math.nan
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, not {df}")
    if t == 0:
        return 1.0
    if math.isinf(t):
        return 0.0
    if math.isinf(df):
        return math.erfc(abs(t) / math.sqrt(2.0))
    ratio = t * t / df  # x = 1 / (1 + ratio) and 1 - x = ratio / (1 + ratio), each without cancellation
    if ratio == 0.0:
        return 1.0
    if math.isinf(ratio):
        return 0.0
    a = df / 2
    log_x = -math.log1p(ratio)
    # x^a (1 - x)^(1/2) / B(a, 1/2), B(a, 1/2) = Gamma(a) Gamma(1/2) / Gamma(a + 1/2); its logarithm's rounding is
    # the tail's sensitivity to t itself (each unit in t's last place moves the tail by about t^2 units in its own)
    log_front = a * log_x + 0.5 * (math.log(ratio) + log_x) + log_gamma_ratio(a) - _HALF_LOG_PI
    # The fraction in decimal: a step can lose a factor df / (1 + t^2) to cancellation, and at large df it converges
    # slowly, each step changing it by about 1 / df of what is left, so both its digits and its stop scale with df.
    scale = max(0, math.ceil(math.log10(df)))
    with localcontext(prec=_DIGITS + 2 * scale):
        r, one, epsilon = Decimal(ratio), Decimal(1), Decimal(10) ** -(_STOP + scale)
        x = one / (one + r)
        if x < (Decimal(a) + 1) / (Decimal(a) + Decimal(2.5)):
            tail = math.exp(log_front - math.log(a)) * float(_fraction(Decimal(a), Decimal(0.5), x, epsilon))
            return tail if tail >= _SMALLEST else 0.0
        front = Decimal(math.exp(log_front - math.log(0.5)))
        return float(one - front * _fraction(Decimal(0.5), Decimal(a), r * x, epsilon))

"""Student's t two-sided tail without scipy (`reporting/student_t.py`): against closed forms derived here, and
against scipy.special.stdtr, whose value the paired t-test gave before."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from scipy import special

from evals_repro.reporting.student_t import log_gamma_ratio, two_sided_p


def scipy_tail(t: float, df: float) -> float:
    return float(2 * special.stdtr(df, -abs(t)))


# t from 1e-6 to 31.6: past that a tail moves by about t^2 units in its last place per unit in t's, in scipy as here.
TS = [float(t) for t in np.logspace(-6, 1.5, 120)]


@pytest.mark.parametrize("df", [0.5, 1.5, 2.0, 3.0, 3.7, 10.0, 29.0, 99.0, 999.0, 4321.7, 7999.5, 1e5, 1e6])
def test_matches_scipy_stdtr(df):
    """To a relative 1e-12 wherever scipy's tail is a normal double (df 1 is left to its closed form below: scipy's
    stdtr is 3e-11 off it at t = 30)."""
    for t in TS:
        expected = scipy_tail(t, df)
        if expected >= sys.float_info.min:
            assert two_sided_p(t, df) == pytest.approx(expected, rel=1e-12), (t, df)
            assert two_sided_p(-t, df) == two_sided_p(t, df)


@pytest.mark.parametrize("t", [1e-9, 0.3, 1.0, 2.5, 12.0, 1e3, 1e8])
def test_closed_forms(t):
    """df 1 (Cauchy): P(|T| >= t) = (2 / pi) atan(1 / t). df 2: 1 - t / sqrt(t^2 + 2) = 2 / (s (s + t)), s = sqrt(t^2 + 2).
    df 3: 1 - (2 / pi) (theta + sin(theta) cos(theta)), theta = atan(t / sqrt 3) (Abramowitz & Stegun 26.7.3).
    df 4: 1 - sin(theta) (1 + cos(theta)^2 / 2), theta = atan(t / 2) (26.7.3). Infinite df: the normal's erfc."""
    s = math.sqrt(t * t + 2)
    assert two_sided_p(t, 1.0) == pytest.approx(2 / math.pi * math.atan(1 / t), rel=1e-14)
    assert two_sided_p(t, 2.0) == pytest.approx(2 / (s * (s + t)), rel=1e-14)
    if t < 100:  # the A&S forms subtract from 1: only where the tail is not tiny
        theta = math.atan(t / math.sqrt(3))
        assert two_sided_p(t, 3.0) == pytest.approx(
            1 - 2 / math.pi * (theta + math.sin(theta) * math.cos(theta)), rel=1e-12, abs=1e-15
        )
        theta = math.atan(t / 2)
        assert two_sided_p(t, 4.0) == pytest.approx(
            1 - math.sin(theta) * (1 + math.cos(theta) ** 2 / 2), rel=1e-12, abs=1e-15
        )
    assert two_sided_p(t, math.inf) == math.erfc(t / math.sqrt(2))


def test_large_df_tends_to_the_normal():
    """P(|T| >= t) = erfc(t / sqrt 2) + phi(t) (t^3 + t) / (2 df) + O(1 / df^2) (the first term of the Edgeworth /
    Cornish-Fisher expansion of the t distribution): at df 1e9 the error of that is below 1e-17."""
    for t in (0.5, 1.0, 1.96, 3.0, 6.0):
        phi = math.exp(-t * t / 2) / math.sqrt(2 * math.pi)
        for df in (1e9, 1e12):
            expected = math.erfc(t / math.sqrt(2)) + phi * (t**3 + t) / (2 * df)
            assert two_sided_p(t, df) == pytest.approx(expected, rel=1e-13)


def test_log_gamma_ratio_recurrence_and_known_values():
    """log Gamma(a + 1/2) - log Gamma(a): at a = 1/2, log Gamma(1) - log Gamma(1/2) = -log(sqrt pi); at 1,
    log(sqrt(pi) / 2); and Gamma(a + 3/2) / Gamma(a + 1) = Gamma(a + 1/2) / Gamma(a) * (a + 1/2) / a across the switch
    from the recurrence to Stirling's series (a = 10)."""
    assert log_gamma_ratio(0.5) == pytest.approx(-0.5 * math.log(math.pi), rel=1e-15)
    assert log_gamma_ratio(1.0) == pytest.approx(math.log(math.sqrt(math.pi) / 2), rel=1e-15)
    for a in (0.3, 7.5, 9.25, 9.75, 9.999, 10.0, 250.0, 1e6):
        step = log_gamma_ratio(a + 1) - log_gamma_ratio(a)
        assert step == pytest.approx(math.log1p(0.5 / a), rel=1e-12, abs=1e-15)
    assert log_gamma_ratio(5.0) == pytest.approx(math.lgamma(5.5) - math.lgamma(5.0), rel=1e-14)


def test_edges():
    assert two_sided_p(0.0, 7.0) == 1.0 and two_sided_p(-0.0, 1e6) == 1.0
    assert two_sided_p(math.inf, 3.0) == 0.0 and two_sided_p(-math.inf, 3.0) == 0.0
    assert math.isnan(two_sided_p(math.nan, 3.0)) and math.isnan(two_sided_p(1.0, math.nan))
    with pytest.raises(ValueError, match="positive"):
        two_sided_p(1.0, 0.0)
    # Below the smallest normal double a tail is 0 (scipy gives a subnormal down to about 3e-311, then 0).
    assert scipy_tail(39.5, 7199.0) < sys.float_info.min and two_sided_p(39.5, 7199.0) == 0.0
    assert scipy_tail(39.0, 7199.0) > sys.float_info.min
    assert two_sided_p(39.0, 7199.0) == pytest.approx(scipy_tail(39.0, 7199.0), rel=1e-12)

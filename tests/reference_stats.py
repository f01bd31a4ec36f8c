"""Reference statistics written apart from the package, for tests to compare it with."""

from __future__ import annotations

import bisect


def reference_holm(raw: list[float]) -> list[float]:
    """Holm's step-down, written here apart from the package: the k-th smallest p times (m - k + 1),
    made monotone and capped at 1."""
    order = sorted(range(len(raw)), key=raw.__getitem__)
    running, adjusted = 0.0, [0.0] * len(raw)
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(raw) - rank) * raw[i]))
        adjusted[i] = running
    return adjusted


def exact_randomization_p(diffs: list[float]) -> float:
    """The exact two-sided p of the paired sign-flip test: the share of all 2^n sign patterns whose |sum|
    reaches the observed |sum|. Counted by meeting in the middle (2 x 2^(n/2) half sums, sorted)."""

    def half_sums(values: list[float]) -> list[float]:
        sums = [0.0]
        for v in values:
            sums = [s + v for s in sums] + [s - v for s in sums]
        return sums

    observed = abs(sum(diffs))
    tolerance = 1e-9 * max(1.0, observed)
    left, right = sorted(half_sums(diffs[: len(diffs) // 2])), half_sums(diffs[len(diffs) // 2 :])
    if observed <= tolerance:
        return 1.0
    count = sum(
        len(left)
        - bisect.bisect_left(left, observed - tolerance - r)
        + bisect.bisect_right(left, -observed + tolerance - r)
        for r in right
    )
    return count / 2 ** len(diffs)

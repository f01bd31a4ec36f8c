"""Latency statistics with cluster bootstrap intervals, and the repeat/first diagnostic.

Resampling unit: a query's repeated calls stay together (a cluster); resampling is stratified by
subset, so each resample has as many queries per subset as the data. Percentile intervals come
from `resamples` draws of one `numpy.random.default_rng(seed)`, drawn subset by subset in sorted
order — fixed so that anyone can recompute them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

STATISTICS = ("mean", "p50", "p90", "p95")
SPEEDUP_THRESHOLD = 0.90
MIN_PAIRS = 5


def statistic(values: np.ndarray, name: str) -> float:
    if name == "mean":
        return float(np.mean(values))
    return float(np.percentile(values, float(name[1:])))


@dataclass(frozen=True)
class Cluster:
    """One query's successful measured latencies (ms), in call order."""

    subset: str
    query_id: str
    latencies: tuple[float, ...]


def _strata(clusters: Sequence[Cluster]) -> list[list[Cluster]]:
    by_subset: dict[str, list[Cluster]] = {}
    for cluster in sorted(clusters, key=lambda c: (c.subset, c.query_id)):
        by_subset.setdefault(cluster.subset, []).append(cluster)
    return [by_subset[name] for name in sorted(by_subset)]


def bootstrap_summary(
    clusters: Sequence[Cluster], resamples: int = 2000, seed: int = 42, confidence: float = 0.95
) -> dict[str, dict[str, float | None]]:
    """Point estimate and percentile interval of each statistic over all pooled latencies (no interval,
    low/high None, when no subset has two queries to resample)."""
    clusters = [c for c in clusters if c.latencies]
    if not clusters:
        return {}
    strata = _strata(clusters)
    pooled = np.concatenate([np.asarray(c.latencies, dtype=float) for s in strata for c in s])
    rng = np.random.default_rng(seed)
    draws = {name: np.empty(resamples) for name in STATISTICS}
    for b in range(resamples):
        parts: list[np.ndarray] = []
        for stratum in strata:
            picks = rng.integers(0, len(stratum), size=len(stratum))
            parts.extend(np.asarray(stratum[i].latencies, dtype=float) for i in picks)
        sample = np.concatenate(parts)
        for name in STATISTICS:
            draws[name][b] = statistic(sample, name)
    tail = (1 - confidence) / 2 * 100
    # One query in every subset: each resample is the data itself, so the "interval" would be the
    # estimate twice, a precision the data does not have. No interval then (low/high None).
    resampled = any(len(stratum) > 1 for stratum in strata)
    summary: dict[str, dict[str, float | None]] = {}
    for name in STATISTICS:
        low, high = np.percentile(draws[name], [tail, 100 - tail]) if resampled else (None, None)
        summary[name] = {
            "estimate": statistic(pooled, name),
            "low": None if low is None else float(low),
            "high": None if high is None else float(high),
        }
    summary["n_calls"] = {"estimate": float(len(pooled))}
    summary["n_queries"] = {"estimate": float(len(clusters))}
    return summary


@dataclass(frozen=True)
class RepeatPair:
    """A query's first measured call and the median of its later calls (ms)."""

    subset: str
    query_id: str
    first: float
    repeat_median: float

    @property
    def ratio(self) -> float:
        """Repeat over first: below 1 when repeats are faster (a cache answering repeats)."""
        return self.repeat_median / self.first if self.first > 0 else float("nan")


def repeat_pairs(clusters: Sequence[Cluster]) -> list[RepeatPair]:
    """Queries with a first call and at least one later call (retried calls already excluded)."""
    pairs = []
    for c in clusters:
        if len(c.latencies) >= 2:
            pairs.append(RepeatPair(c.subset, c.query_id, c.latencies[0], float(np.median(c.latencies[1:]))))
    return pairs


def repeat_diagnostic(
    clusters: Sequence[Cluster], resamples: int = 2000, seed: int = 42, confidence: float = 0.95
) -> dict[str, object]:
    """Paired, subset-stratified bootstrap of the median repeat/first ratio.

    Verdicts: `repeat speed-up` when the whole interval lies below 0.90 (later calls of a query
    are faster than its first: something caches repeats), `inconclusive` when it crosses 0.90,
    `no speed-up` when it lies at or above 0.90, `too few pairs` under five pairs.
    """
    pairs = repeat_pairs(clusters)
    result: dict[str, object] = {
        "pairs": len(pairs),
        "first_median": float(np.median([p.first for p in pairs])) if pairs else None,
        "repeat_median": float(np.median([p.repeat_median for p in pairs])) if pairs else None,
    }
    if len(pairs) < MIN_PAIRS:
        result["verdict"] = "too few pairs"
        return result
    by_subset: dict[str, list[float]] = {}
    for pair in sorted(pairs, key=lambda p: (p.subset, p.query_id)):
        by_subset.setdefault(pair.subset, []).append(pair.ratio)
    strata = [np.asarray(by_subset[name]) for name in sorted(by_subset)]
    ratios = np.concatenate(strata)
    rng = np.random.default_rng(seed)
    draws = np.empty(resamples)
    for b in range(resamples):
        sample = np.concatenate([s[rng.integers(0, len(s), size=len(s))] for s in strata])
        draws[b] = np.median(sample)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    result.update(ratio=float(np.median(ratios)), low=float(low), high=float(high))
    if high < SPEEDUP_THRESHOLD:
        result["verdict"] = "repeat speed-up"
    elif low < SPEEDUP_THRESHOLD:
        result["verdict"] = "inconclusive"
    else:
        result["verdict"] = "no speed-up"
    return result

"""Reading a vLLM replica's `/metrics` (Prometheus text exposition) and proving its prefix cache is off.

A latency figure is only a model's when no call could be answered from a cache of an earlier one.
Before any timed request, every replica must show, in vLLM 0.33's own metrics
(v1/metrics/loggers.py):
- `vllm:cache_config_info` (a gauge whose labels are the CacheConfig fields) with
  `enable_prefix_caching="False"`;
- the prefix-cache counters (`vllm:prefix_cache_queries_total`, `vllm:prefix_cache_hits_total`, and, where
  exported, `vllm:prompt_tokens_cached_total` and `vllm:external_prefix_cache_hits_total`) not moving while
  the same probe prompt is scored twice. With caching off vLLM never looks a request up
  (`KVCacheManager.prefix_cache_lookup_enabled`), so even the queries counter stays still.
The counters are read only once `vllm:request_success_total` shows both probes finished, so a check
never passes just because the statistics had not been logged yet. A missing gauge or counter, or
statistics that never arrive, make the cache unverifiable, which stops the run just like an enabled one.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..base.errors import ConfigurationError

CACHE_INFO = "vllm:cache_config_info"
QUERIES = "vllm:prefix_cache_queries_total"
HITS = "vllm:prefix_cache_hits_total"
REQUIRED_COUNTERS = (QUERIES, HITS)
OPTIONAL_COUNTERS = ("vllm:prompt_tokens_cached_total", "vllm:external_prefix_cache_hits_total")
FINISHED = "vllm:request_success_total"
STATS_TIMEOUT = 10.0  # seconds for the probes to show in the statistics (vLLM logs them within a step)

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


def _labels(text: str, start: int, line: str) -> tuple[dict[str, str], int]:
    """Parse `{a="x",b="y"}` from `start` (just after `{`); returns the labels and the index after `}`."""
    labels: dict[str, str] = {}
    i = start
    while True:
        while i < len(text) and text[i] in " ,":
            i += 1
        if i < len(text) and text[i] == "}":
            return labels, i + 1
        match = _NAME.match(text, i)
        if not match or text[match.end() : match.end() + 2] != '="':
            raise ValueError(f"bad label in metrics line: {line[:200]}")
        key, i = match.group(), match.end() + 2
        value = []
        while i < len(text) and text[i] != '"':
            if text[i] == "\\" and i + 1 < len(text):
                value.append(_ESCAPES.get(text[i + 1], "\\" + text[i + 1]))
                i += 2
            else:
                value.append(text[i])
                i += 1
        if i >= len(text):
            raise ValueError(f"unterminated label value in metrics line: {line[:200]}")
        labels[key] = "".join(value)
        i += 1


def parse_exposition(text: str) -> list[Sample]:
    """Every sample of a Prometheus text exposition (comments skipped; NaN and +/-Inf understood)."""
    samples = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _NAME.match(line)
        if not match:
            raise ValueError(f"bad metrics line: {line[:200]}")
        name, rest = match.group(), match.end()
        labels: dict[str, str] = {}
        if rest < len(line) and line[rest] == "{":
            labels, rest = _labels(line, rest + 1, line)
        fields = line[rest:].split()
        if not fields:
            raise ValueError(f"metrics line without a value: {line[:200]}")
        samples.append(Sample(name, labels, float(fields[0])))  # float() reads NaN, +Inf, -Inf
    return samples


def total(samples: list[Sample], name: str) -> float | None:
    """Sum of a metric over its label sets (engines, finish reasons); None when it is not exported."""
    values = [s.value for s in samples if s.name == name]
    return math.fsum(values) if values else None


class CacheCheckFailed(ConfigurationError):
    """A replica whose prefix cache is on, or cannot be shown to be off."""


def cache_check_failed(name: str, url: str, why: str) -> CacheCheckFailed:
    return CacheCheckFailed(
        f"{name} replica {url}: {why}",
        f"restart it with prefix caching disabled (`evals-repro serve-reranker {name} --devices ...` does), "
        "then rerun: no latency is measured against a replica whose prefix cache is not verifiably off",
    )


def verify_prefix_cache_off(
    name: str,
    url: str,
    read_metrics: Callable[[], str | None],
    probe: Callable[[], int],
    *,
    timeout: float | None = None,
    poll: float = 0.05,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, object]:
    """Check one replica; returns the evidence for the study manifest, or raises CacheCheckFailed.

    `read_metrics()` returns the `/metrics` text (None when the replica exports none); `probe()` scores
    the same fixed prompt once and returns its token count (called twice).
    """

    timeout = STATS_TIMEOUT if timeout is None else timeout

    def snapshot() -> list[Sample]:
        text = read_metrics()
        if text is None:
            raise cache_check_failed(name, url, "it exports no /metrics, so its prefix cache cannot be verified off")
        try:
            return parse_exposition(text)
        except ValueError as exc:
            raise cache_check_failed(name, url, f"its /metrics cannot be read ({exc})") from None

    before = snapshot()
    infos = [s for s in before if s.name == CACHE_INFO]
    if not infos or any("enable_prefix_caching" not in s.labels for s in infos):
        raise cache_check_failed(
            name, url, f"its /metrics has no {CACHE_INFO}{{enable_prefix_caching=...}}: cannot verify"
        )
    flags = sorted({s.labels["enable_prefix_caching"] for s in infos})
    if flags != ["False"]:
        raise cache_check_failed(
            name, url, f"prefix caching is enabled ({CACHE_INFO} enable_prefix_caching={','.join(flags)})"
        )
    counters = {c: total(before, c) for c in (*REQUIRED_COUNTERS, *OPTIONAL_COUNTERS)}
    missing = [c for c in REQUIRED_COUNTERS if counters[c] is None]
    if missing or total(before, FINISHED) is None:
        absent = ", ".join(missing or [FINISHED])
        raise cache_check_failed(name, url, f"its /metrics lacks {absent}: cannot verify the prefix cache is off")
    finished_before = total(before, FINISHED) or 0.0
    tokens = [probe(), probe()]
    deadline = clock() + timeout
    while True:
        after = snapshot()
        finished = (total(after, FINISHED) or 0.0) - finished_before
        if finished >= 2:
            break
        if clock() >= deadline:
            raise cache_check_failed(
                name, url, f"its statistics did not record the two probe requests within {timeout:g} s"
            )
        sleep(poll)
    moved = {}
    evidence: dict[str, object] = {}
    for counter, value in counters.items():
        if value is None:
            continue
        now = total(after, counter)
        evidence[counter] = [value, now]
        if now is None or now != value:
            moved[counter] = (value, now)
    if moved:
        detail = ", ".join(f"{c} {a:g} -> {'gone' if b is None else f'{b:g}'}" for c, (a, b) in moved.items())
        raise cache_check_failed(name, url, f"a repeated request moved its prefix-cache counters ({detail})")
    return {
        "replica": url,
        "enable_prefix_caching": "False",
        "probe_tokens": tokens[0],
        "probe_requests": 2,
        "counters": evidence,
        "checked_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "verified_off": True,
    }

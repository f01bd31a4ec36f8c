"""How far the character estimate is from each model's tokenizer, learned from what providers reported.

Every paid call that names its model records (estimated, reported) input tokens here (outputs are not: their
estimate is a cap); a run saves the
sums beside its caches (`<cache dir>/token-ratios.json`, merged with earlier runs), and a plan scales its
estimates by reported / estimated for that model. The throttle's own estimate errs high on purpose
(ASCII characters / 3); a plan calibrated by an earlier run is within a few percent of what is billed.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from ..base.io import atomic_write_text

FILE = "token-ratios.json"
MIN_ESTIMATED = 200  # fewer estimated tokens than this teach nothing reliable

_session: dict[tuple[str, str], list[float]] = {}  # (provider, model) -> [estimated, reported] since the last save
_lock = threading.Lock()


def record(provider: str, model: str, estimated: float, reported: float) -> None:
    if estimated <= 0 or reported <= 0:
        return
    with _lock:
        sums = _session.setdefault((provider, model), [0.0, 0.0])
        sums[0] += estimated
        sums[1] += reported


def _read(path: Path) -> dict[str, list[float]]:
    try:
        data = json.loads(path.read_text("utf-8"))
        return {k: [float(v[0]), float(v[1])] for k, v in data.get("models", {}).items()}
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return {}  # absent or damaged: plans fall back to the raw estimate


def save(cache_dir: Path) -> None:
    """Add this process's observations to the cache folder's file (written atomically), then forget them."""
    with _lock:
        if not _session:
            return
        observed = dict(_session)
        _session.clear()
    path = Path(cache_dir) / FILE
    sums = _read(path)
    for (provider, model), (estimated, reported) in observed.items():
        key = f"{provider} {model}"
        old = sums.get(key, [0.0, 0.0])
        sums[key] = [old[0] + estimated, old[1] + reported]
    if Path(cache_dir).is_dir():
        atomic_write_text(path, json.dumps({"format": 1, "models": sums}, indent=1, sort_keys=True) + "\n")


def ratios(cache_dir: Path) -> dict[tuple[str, str], float]:
    """(provider, model) -> reported / estimated tokens, for models with enough observations."""
    found = {}
    for key, (estimated, reported) in _read(Path(cache_dir) / FILE).items():
        provider, _, model = key.partition(" ")
        if estimated >= MIN_ESTIMATED and reported > 0:
            found[(provider, model)] = reported / estimated
    return found


def reset() -> None:
    with _lock:
        _session.clear()

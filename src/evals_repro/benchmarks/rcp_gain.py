"""The release's gain link: each criterion's 2PL item parameters and the gain of a calibrated ability."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..base.errors import DataError


def parse_item_params(path: Path) -> list[tuple[float, float]]:
    """The five criteria's (gamma, beta): discrimination and difficulty of the 2PL model.

    Accepts `{"items": [{"gamma": g, "beta": b}, ...]}`, a bare list of such objects, or
    `{"gamma": [...], "beta": [...]}` (also `a`/`b` or `discrimination`/`difficulty`).
    """
    try:
        raw: Any = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not readable JSON ({exc})", "re-download the item parameters") from None
    names = (("gamma", "beta"), ("a", "b"), ("discrimination", "difficulty"))

    def pick(obj: dict) -> tuple[Any, Any] | None:
        for g, b in names:
            if g in obj and b in obj:
                return obj[g], obj[b]
        return None

    params: list[tuple[float, float]] = []
    columns = pick(raw) if isinstance(raw, dict) else None
    if columns is not None and isinstance(columns[0], list):
        gammas, betas = columns
        params = list(zip(gammas, betas))
    else:
        items = raw.get("items", raw.get("criteria")) if isinstance(raw, dict) else raw
        if isinstance(items, dict):
            items = list(items.values())
        for item in items or []:
            found = pick(item) if isinstance(item, dict) else None
            if found is None:
                params = []
                break
            params.append(found)
    try:
        params = [(float(g), float(b)) for g, b in params]
    except (TypeError, ValueError):
        params = []
    if (
        not params
        or any(not (math.isfinite(g) and math.isfinite(b)) for g, b in params)
        or sum(g for g, _ in params) <= 0
    ):
        raise DataError(
            f"{path}: no usable item parameters",
            "expected gamma/beta (discrimination/difficulty) per criterion, gammas summing > 0",
        )
    return params


def gain(theta: float, params: list[tuple[float, float]]) -> float:
    """The release's link: gain(θ) = Σ γ_k σ(γ_k (θ − β_k)) / Σ γ_k, in (0, 1)."""
    total = 0.0
    for gamma, beta in params:
        z = gamma * (theta - beta)
        sigma = 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))
        total += gamma * sigma
    return total / sum(g for g, _ in params)

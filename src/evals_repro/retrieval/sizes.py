"""Sizes given on the command line (`--index-ram 8G`), parsed without importing NumPy: a bad value is refused
before any heavy module loads."""

from __future__ import annotations

import re
from typing import Any

from ..base.errors import UsageError

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(value: Any, option: str = "--index-ram") -> int | None:
    """Bytes from 123, "512M", "8G", "8GiB" or "1.5T"; None for "auto" (or None)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", str(value).lower())
    if not match:
        raise UsageError(f"{option} '{value}' is not a size", "pass bytes such as 8G, 512M or 2000000000, or auto")
    return int(float(match.group(1)) * _UNITS[match.group(2)])

"""Token estimates from characters and request plans that respect item and token limits.

Estimates only size requests and book throttle budget; the provider's reported counts stay
authoritative (the throttle re-books a call with them once it returns).
"""

from __future__ import annotations

import math

ASCII_CHARS_PER_TOKEN = 3.0  # English BPE averages ~4 characters a token; 3 errs on the safe side
# Outside ASCII (CJK, Cyrillic, accented letters) a character is roughly a token or more: count each as one.


def estimate_tokens(text: str | None) -> int:
    """Upper-leaning token estimate: ASCII characters / 3, plus one per non-ASCII character; >= 1."""
    if not text:
        return 1
    non_ascii = sum(1 for ch in text if ord(ch) > 127)
    return max(1, math.ceil((len(text) - non_ascii) / ASCII_CHARS_PER_TOKEN) + non_ascii)


def plan_batches(token_counts: list[int], max_items: int, max_tokens: int) -> list[list[int]]:
    """Split positions 0..n-1 into consecutive batches within both limits, every position once, in order.

    An item over `max_tokens` on its own gets a batch to itself (the provider truncates or rejects it).
    """
    if max_items < 1 or max_tokens < 1:
        raise ValueError("batch limits must be at least 1")
    batches: list[list[int]] = []
    current: list[int] = []
    current_tokens = 0
    for position, count in enumerate(token_counts):
        if current and (len(current) >= max_items or current_tokens + count > max_tokens):
            batches.append(current)
            current, current_tokens = [], 0
        current.append(position)
        current_tokens += count
    if current:
        batches.append(current)
    return batches

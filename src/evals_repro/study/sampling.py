"""Which queries the latency run times: reproducible from the seed alone.

`samples` queries per benchmark are allocated as evenly as possible across its subsets; the
remainder goes to subsets drawn with the seed. Within a subset, queries are drawn without
replacement from the sorted ids with a generator seeded by (seed, subset name).
"""

from __future__ import annotations

import hashlib
import random


def _rng(seed: int, *parts: str) -> random.Random:
    digest = hashlib.sha256(":".join([str(seed), *parts]).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def allocate(samples: int, available: dict[str, int], seed: int) -> dict[str, int]:
    """Queries per subset: an even share each, the remainder to seed-drawn subsets, capped by supply."""
    names = sorted(name for name, count in available.items() if count > 0)
    allocation = {name: 0 for name in names}
    remaining = min(samples, sum(available[n] for n in names))
    rng = _rng(seed, "allocation")
    while remaining > 0:
        open_subsets = [n for n in names if allocation[n] < available[n]]
        share, extra = divmod(remaining, len(open_subsets))
        for name in open_subsets:
            take = min(share, available[name] - allocation[name])
            allocation[name] += take
            remaining -= take
        if share == 0 or remaining == extra:
            still_open = [n for n in open_subsets if allocation[n] < available[n]]
            for name in rng.sample(still_open, min(remaining, len(still_open))):
                allocation[name] += 1
                remaining -= 1
    return allocation


def sample_queries(query_ids: dict[str, list[str]], samples: int, seed: int) -> dict[str, list[str]]:
    """The timed query ids per subset, sorted, drawn without replacement."""
    allocation = allocate(samples, {name: len(ids) for name, ids in query_ids.items()}, seed)
    chosen = {}
    for name, count in allocation.items():
        pool = sorted(query_ids[name])
        chosen[name] = sorted(_rng(seed, name).sample(pool, count))
    return chosen


def shuffled(items: list, seed: int, *parts: str) -> list:
    """A deterministic shuffle of `items` for one (seed, context)."""
    copy = list(items)
    _rng(seed, *parts).shuffle(copy)
    return copy

"""Reciprocal rank: `mrr_at_{k}` is 1 / rank of the first relevant document within the top k, else 0.

trec_eval's `recip_rank` has no cutoff. The first relevant document is within rank k exactly when
recip_rank >= 1/k (trec_eval computes it as 1.0 / rank), so `mrr_at_{k}` is read off the same
pytrec_eval pass as `recip_rank`. `mrr` is the uncut `recip_rank`. trec_eval has no name for the
cut variant; `recip_rank_cut_{k}` is printed for it so a diff never pairs it with uncut values.
"""

import re

from .base import Family, Measure, register
from .trec_measures import make

_FORM = re.compile(r"mrr_at_([1-9][0-9]*)")


def _parse(text: str) -> Measure | None:
    if text == "mrr":
        return make("recip_rank")
    match = _FORM.fullmatch(text)
    if match is None:
        return None
    k = int(match.group(1))
    return make("recip_rank", name=f"mrr_at_{k}", trec_name=f"recip_rank_cut_{k}", rr_cut=k, cutoff=k)


FAMILY = register(Family("rr", ("mrr_at_{k}", "mrr"), _parse))

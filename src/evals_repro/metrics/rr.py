"""Reciprocal rank: `mrr_at_{k}` is 1 / rank of the first relevant document within the top k, else 0.

trec_eval's `recip_rank` has no cutoff, so each ranking is truncated to k (in trec_eval order)
before pytrec_eval sees it. `mrr` is the uncut `recip_rank`. trec_eval has no name for the cut
variant; `recip_rank_cut_{k}` is printed for it so a diff never pairs it with uncut values.
"""

from .base import register
from .pytrec import cutoff_family

FAMILY = register(
    cutoff_family(
        "rr",
        "mrr",
        spec=lambda k: "recip_rank",
        key=lambda k: "recip_rank",
        trec_name=lambda k: f"recip_rank_cut_{k}",
        uncut=("recip_rank", "recip_rank"),
        cut_depth=True,
    )
)

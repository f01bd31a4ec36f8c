"""Our `<name>_at_{k}` names for trec_eval's measures, one family each (registered in this order).

- nDCG (`ndcg_cut`): linear gain = the integer relevance grade, log2(rank + 1) discount, the ideal
  ranking built from every judged document of the query; `ndcg` uncut.
- Average precision: `map` over the full ranking, `map_at_{k}` = `map_cut` (precision at each relevant
  document within the top k, divided by the number of relevant documents).
- Recall at k (`recall.k`): relevant documents in the top k / all relevant documents.
- Precision at k (`P.k`): relevant documents in the top k / k (missing ranks count as non-relevant).
- Reciprocal rank: `mrr_at_{k}` is 1 / rank of the first relevant document within the top k, else 0.
  trec_eval's `recip_rank` has no cutoff. The first relevant document is within rank k exactly when
  recip_rank >= 1/k (trec_eval computes it as 1.0 / rank), so `mrr_at_{k}` is read off the same
  pytrec_eval pass as `recip_rank`. `mrr` is the uncut `recip_rank`. trec_eval has no name for the cut
  variant; `recip_rank_cut_{k}` is printed for it so a diff never pairs it with uncut values.
- Success at k (`success.k`): 1 when a relevant document is in the top k, else 0.
"""

from __future__ import annotations

import re

from ..protocol import Family, Measure, register
from .names import make, our_family

_MRR = re.compile(r"mrr_at_([1-9][0-9]*)")


def _parse_rr(text: str) -> Measure | None:
    if text == "mrr":
        return make("recip_rank")
    match = _MRR.fullmatch(text)
    if match is None:
        return None
    k = int(match.group(1))
    return make("recip_rank", name=f"mrr_at_{k}", trec_name=f"recip_rank_cut_{k}", rr_cut=k, cutoff=k)


FAMILIES = (
    register(our_family("ndcg", "ndcg", "ndcg_cut", uncut="ndcg")),
    register(our_family("map", "map", "map_cut", uncut="map")),
    register(our_family("recall", "recall", "recall")),
    register(our_family("precision", "p", "P")),
    register(Family("rr", ("mrr_at_{k}", "mrr"), _parse_rr)),
    register(our_family("success", "success", "success")),
)

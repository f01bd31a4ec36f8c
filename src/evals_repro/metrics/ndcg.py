"""nDCG (trec_eval `ndcg_cut`): linear gain = the integer relevance grade, log2(rank + 1) discount,
the ideal ranking built from every judged document of the query."""

from .base import register
from .trec_measures import our_family

FAMILY = register(our_family("ndcg", "ndcg", "ndcg_cut", uncut="ndcg"))

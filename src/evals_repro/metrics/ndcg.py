"""nDCG (trec_eval `ndcg_cut`): linear gain = the integer relevance grade, log2(rank + 1) discount,
the ideal ranking built from every judged document of the query."""

from .base import register
from .pytrec import cutoff_family

FAMILY = register(
    cutoff_family(
        "ndcg",
        "ndcg",
        spec=lambda k: f"ndcg_cut.{k}",
        key=lambda k: f"ndcg_cut_{k}",
        uncut=("ndcg", "ndcg"),
    )
)

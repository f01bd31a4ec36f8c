"""Average precision: `map` over the full ranking, `map_at_{k}` = trec_eval `map_cut` (precision at
each relevant document within the top k, divided by the number of relevant documents)."""

from .base import register
from .pytrec import cutoff_family

FAMILY = register(
    cutoff_family(
        "map",
        "map",
        spec=lambda k: f"map_cut.{k}",
        key=lambda k: f"map_cut_{k}",
        uncut=("map", "map"),
    )
)

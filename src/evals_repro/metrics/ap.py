"""Average precision: `map` over the full ranking, `map_at_{k}` = trec_eval `map_cut` (precision at
each relevant document within the top k, divided by the number of relevant documents)."""

from .base import register
from .trec_measures import our_family

FAMILY = register(our_family("map", "map", "map_cut", uncut="map"))

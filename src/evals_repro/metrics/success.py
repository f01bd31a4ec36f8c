"""Success at k (trec_eval `success.k`): 1 when a relevant document is in the top k, else 0."""

from .base import register
from .trec_measures import our_family

FAMILY = register(our_family("success", "success", "success"))

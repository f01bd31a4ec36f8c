"""Recall at k (trec_eval `recall.k`): relevant documents in the top k / all relevant documents."""

from .base import register
from .trec_measures import our_family

FAMILY = register(our_family("recall", "recall", "recall"))

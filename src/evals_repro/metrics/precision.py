"""Precision at k (trec_eval `P.k`): relevant documents in the top k / k (short rankings count
the missing ranks as non-relevant)."""

from .base import register
from .trec_measures import our_family

FAMILY = register(our_family("precision", "p", "P"))

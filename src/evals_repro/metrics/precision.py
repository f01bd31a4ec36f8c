"""Precision at k (trec_eval `P.k`): relevant documents in the top k / k (short rankings count
the missing ranks as non-relevant)."""

from .base import register
from .pytrec import cutoff_family

FAMILY = register(
    cutoff_family(
        "precision",
        "p",
        spec=lambda k: f"P.{k}",
        key=lambda k: f"P_{k}",
    )
)

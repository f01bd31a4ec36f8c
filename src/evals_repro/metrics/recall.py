"""Recall at k (trec_eval `recall.k`): relevant documents in the top k / all relevant documents."""

from .base import register
from .pytrec import cutoff_family

FAMILY = register(
    cutoff_family(
        "recall",
        "recall",
        spec=lambda k: f"recall.{k}",
        key=lambda k: f"recall_{k}",
    )
)

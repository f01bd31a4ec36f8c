"""Offline rerankers: cosine similarity of a local embedder (minilm, multilingual-e5-small).

They need no key and no network, so `<first stage>+minilm@50` and the reranking study run on a
fresh clone. A bi-encoder is a weaker reranker than a cross-encoder; it is offered for offline
comparisons and for exercising the study protocol with a real model, never as a stand-in for the
hosted rerankers' numbers. Document vectors are kept in memory per text, so a page shared by
many queries' candidates is embedded once per process. Usage keys follow the provider ones
(`<name>_requests`, `_attempts`, `_call_seconds`) so the latency study times them the same way.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import TYPE_CHECKING, Any

from ..base.context import MethodContext
from ..base.registry import RERANKERS
from ..embedders.base import EmbedItem
from ..embedders.registry import build_embedder

if TYPE_CHECKING:
    import numpy as np


class LocalEmbeddingReranker:
    def __init__(self, name: str, ctx: MethodContext):
        self.name = name
        self.ctx = ctx
        self.embedder = build_embedder(name, ctx)
        self.model = self.embedder.model
        self._vectors: dict[bytes, np.ndarray] = {}
        self._lock = threading.Lock()

    def _document_vectors(self, documents: list[str]) -> np.ndarray:
        import numpy as np

        keys = [hashlib.sha256(d.encode()).digest() for d in documents]
        with self._lock:
            missing = {k: d for k, d in zip(keys, documents) if k not in self._vectors}
        if missing:
            vectors = self.embedder.embed([EmbedItem(text=d) for d in missing.values()], "document")
            with self._lock:
                self._vectors.update(zip(missing, vectors))
            self.ctx.usage.add("embedded_items", len(missing))
        with self._lock:
            return np.stack([self._vectors[k] for k in keys]) if keys else np.zeros((0, 1), np.float32)

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        import numpy as np

        usage = self.ctx.usage
        usage.add(f"{self.name}_requests")
        usage.add(f"{self.name}_attempts")
        started = time.perf_counter_ns()
        if not documents:
            return []
        matrix = self._document_vectors(documents)
        query_vector = self.embedder.embed([EmbedItem(text=query)], "query")[0]
        scores = (matrix.astype(np.float64) @ query_vector.astype(np.float64)).tolist()
        usage.add(f"{self.name}_call_seconds", (time.perf_counter_ns() - started) / 1e9)
        return scores

    def describe(self) -> dict[str, Any]:
        return {"reranker": self.name, "kind": "local bi-encoder cosine", "embedder": self.embedder.describe()}


@RERANKERS.register(
    "minilm",
    description="offline: all-MiniLM-L6-v2 cosine (a bi-encoder, not a cross-encoder)",
    study_models={"minilm": None},
)
@RERANKERS.register(
    "multilingual-e5-small",
    description="offline: multilingual-e5-small cosine (a bi-encoder)",
    study_models={"e5": None},
)
def build(name: str, model: str | None, ctx: MethodContext) -> LocalEmbeddingReranker:
    from ..base.errors import UsageError

    if model is not None:
        raise UsageError(f"reranker '{name}' takes no model", f"write +{name}@<depth>")
    return LocalEmbeddingReranker(name, ctx)

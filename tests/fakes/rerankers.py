"""Rerank routes of Cohere (`/v2/rerank`) and Voyage (`/v1/rerank`), scoring by query-word overlap.

The Voyage route enforces the aggregate token limit the way the service documents it:
query tokens x documents + sum of document tokens (tokens counted here as characters / 4).
"""

from __future__ import annotations

from typing import Any

from ._http import FakeServer, Request, overlap_score


def fake_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class CohereRerankFake(FakeServer):
    def __init__(self) -> None:
        super().__init__()
        self.route("POST", r"/v2/rerank", self._rerank)

    def _rerank(self, request: Request) -> tuple[int, Any]:
        body = request.json()
        documents = body["documents"]
        scores = [overlap_score(body["query"], doc) for doc in documents]
        order = sorted(range(len(documents)), key=lambda i: -scores[i])
        top_n = body.get("top_n") or len(documents)
        return 200, {"id": "rr-1", "results": [{"index": i, "relevance_score": scores[i]} for i in order[:top_n]],
                     "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}}


class VoyageRerankFake(FakeServer):
    def __init__(self, aggregate_limit: int = 600_000, max_documents: int = 1000) -> None:
        super().__init__()
        self.aggregate_limit = aggregate_limit
        self.max_documents = max_documents
        self.batches: list[list[str]] = []
        self.route("POST", r"/v1/rerank", self._rerank)

    def _rerank(self, request: Request) -> tuple[int, Any]:
        body = request.json()
        documents = body["documents"]
        total = fake_tokens(body["query"]) * len(documents) + sum(fake_tokens(d) for d in documents)
        if total > self.aggregate_limit or len(documents) > self.max_documents:
            return 400, {"detail": f"total tokens {total} exceed the limit {self.aggregate_limit}"}
        self.batches.append(list(documents))
        scores = [overlap_score(body["query"], doc) for doc in documents]
        order = sorted(range(len(documents)), key=lambda i: -scores[i])
        top_k = body.get("top_k") or len(documents)
        return 200, {"object": "list", "model": body["model"], "usage": {"total_tokens": total},
                     "data": [{"index": i, "relevance_score": scores[i]} for i in order[:top_k]]}

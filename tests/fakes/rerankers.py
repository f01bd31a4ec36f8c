"""Rerank routes added to the Cohere (`/v2/rerank`) and Voyage (`/v1/rerank`) fakes.

Scores are the fakes' bag-of-words cosine (`relevance`), so tests compute the expected scores
independently. The Voyage route enforces the aggregate token limit as the service documents it:
query tokens x documents + sum of document tokens, with at most `max_documents` documents.
"""

from __future__ import annotations

import numpy as np

from .base import Reply, Request, bag_of_words, count_tokens, route
from .cohere import FakeCohere
from .voyage import FakeVoyage


def relevance(query: str, document: str) -> float:
    return float(np.dot(bag_of_words(query), bag_of_words(document)))


def count_requests(fake, method: str, path_prefix: str) -> int:
    return sum(1 for r in fake.requests if r.method == method and r.path.startswith(path_prefix))


class FakeCohereRerank(FakeCohere):
    @route("POST", r"/v2/rerank")
    def rerank(self, request: Request) -> Reply:
        body = request.json
        documents = body["documents"]
        scores = [relevance(body["query"], doc) for doc in documents]
        order = sorted(range(len(documents)), key=lambda i: -scores[i])[: body.get("top_n") or len(documents)]
        return Reply(
            200,
            {
                "id": "rr-1",
                "results": [{"index": i, "relevance_score": scores[i]} for i in order],
                "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}},
            },
        )


class FakeVoyageRerank(FakeVoyage):
    aggregate_limit = 600_000
    max_documents = 1000

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def aggregate_tokens(self, query: str, documents: list[str]) -> int:
        return count_tokens(query) * len(documents) + sum(count_tokens(d) for d in documents)

    @route("POST", r"/v1/rerank")
    def rerank(self, request: Request) -> Reply:
        body = request.json
        documents = body["documents"]
        total = self.aggregate_tokens(body["query"], documents)
        if total > self.aggregate_limit or len(documents) > self.max_documents:
            return self.error_reply(400, f"total tokens {total} exceed the limit {self.aggregate_limit}")
        self.batches.append(list(documents))
        scores = [relevance(body["query"], doc) for doc in documents]
        order = sorted(range(len(documents)), key=lambda i: -scores[i])[: body.get("top_k") or len(documents)]
        return Reply(
            200,
            {
                "object": "list",
                "model": body["model"],
                "usage": {"total_tokens": total},
                "data": [{"index": i, "relevance_score": scores[i]} for i in order],
            },
        )

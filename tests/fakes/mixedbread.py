"""Fake Mixedbread API: `/v1/reranking` (base URL for the SDK: `fake.url`). Stores routes are added by subclassing."""

from __future__ import annotations

import numpy as np

from .base import FakeServer, Reply, Request, bag_of_words, count_tokens, route


class FakeMixedbread(FakeServer):
    def error_reply(self, status: int, message: str = "error", headers: dict | None = None) -> Reply:
        return Reply(status, {"message": message}, headers or {})

    @route("POST", r"/v1/reranking")
    def reranking(self, request: Request) -> Reply:
        body = request.json
        documents = [d if isinstance(d, str) else str(d) for d in body["input"]]
        query = bag_of_words(body["query"])
        scores = [float(np.dot(query, bag_of_words(d))) for d in documents]
        order = sorted(range(len(documents)), key=lambda i: -scores[i])[: body.get("top_k") or len(documents)]
        tokens = count_tokens(body["query"]) + sum(count_tokens(d) for d in documents)
        data = [
            {
                "index": i,
                "score": scores[i],
                "object": "rank_result",
                **({"input": documents[i]} if body.get("return_input") else {}),
            }
            for i in order
        ]
        return Reply(
            200,
            {
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                "model": body.get("model") or "mixedbread-ai/mxbai-rerank-large-v2",
                "data": data,
                "object": "list",
                "top_k": len(order),
                "return_input": bool(body.get("return_input")),
            },
        )

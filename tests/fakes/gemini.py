"""Fake Gemini Developer API: `/{v1,v1beta,v1alpha}/models/{model}:batchEmbedContents` and `:embedContent`."""

from __future__ import annotations

import base64

from .base import DEFAULT_DIMENSION, FakeServer, Reply, Request, bag_of_words, count_tokens, image_words, route

STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def content_text(content: dict) -> str:
    words = []
    for part in content.get("parts", []):
        if "text" in part:
            words.append(part["text"])
        inline = part.get("inline_data") or part.get("inlineData")
        if inline:
            words.append(image_words(base64.urlsafe_b64decode(inline["data"])))
    return " ".join(words)


class FakeGemini(FakeServer):
    report_usage = True  # False: answer without usageMetadata (as an older API or a proxy might)

    def error_reply(self, status: int, message: str = "error", headers: dict | None = None) -> Reply:
        return Reply(
            status,
            {"error": {"code": status, "message": message, "status": STATUS.get(status, "UNKNOWN")}},
            headers or {},
        )

    def _values(self, request: dict) -> dict:
        dimension = request.get("outputDimensionality") or DEFAULT_DIMENSION
        return {"values": [float(x) for x in bag_of_words(content_text(request["content"]), dimension)]}

    @route("POST", r"/v1(?:beta|alpha)?/models/(?P<model>[^:/]+):batchEmbedContents")
    def batch_embed(self, request: Request) -> Reply:
        requests = request.json["requests"]
        if len(requests) > 100:
            return self.error_reply(400, "BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch")
        if not self.report_usage:
            return Reply(200, {"embeddings": [self._values(r) for r in requests]})
        tokens = sum(count_tokens(content_text(r["content"])) for r in requests)
        # As the Gemini API does: usage in the top-level usageMetadata (promptTokenCount, no total for embeddings).
        return Reply(
            200,
            {
                "embeddings": [self._values(r) for r in requests],
                "usageMetadata": {
                    "promptTokenCount": tokens,
                    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": tokens}],
                },
            },
        )

    @route("POST", r"/v1(?:beta|alpha)?/models/(?P<model>[^:/]+):embedContent")
    def embed(self, request: Request) -> Reply:
        return Reply(200, {"embedding": self._values(request.json)})

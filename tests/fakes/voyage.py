"""Fake Voyage API: `/v1/embeddings` and `/v1/multimodalembeddings` (base URL for the SDK: `fake.url + "/v1"`)."""

from __future__ import annotations

import base64

import numpy as np

from .base import DEFAULT_DIMENSION, FakeServer, Reply, Request, bag_of_words, count_tokens, image_words, route


def encode(vector: np.ndarray, encoding_format: str | None):
    if encoding_format == "base64":
        return base64.b64encode(np.asarray(vector, "<f4").tobytes()).decode()
    return [float(x) for x in vector]


class FakeVoyage(FakeServer):
    def error_reply(self, status: int, message: str = "error", headers: dict | None = None) -> Reply:
        return Reply(status, {"detail": message}, headers or {})

    def _answer(self, body: dict, texts: list[str], usage: dict) -> Reply:
        dimension = body.get("output_dimension") or DEFAULT_DIMENSION
        data = [
            {
                "object": "embedding",
                "embedding": encode(bag_of_words(t, dimension), body.get("encoding_format")),
                "index": i,
            }
            for i, t in enumerate(texts)
        ]
        return Reply(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})

    @route("POST", r"/v1/embeddings")
    def embeddings(self, request: Request) -> Reply:
        body = request.json
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return self._answer(body, texts, {"total_tokens": sum(count_tokens(t) for t in texts)})

    @route("POST", r"/v1/multimodalembeddings")
    def multimodal(self, request: Request) -> Reply:
        body = request.json
        texts, text_tokens, pixels = [], 0, 0
        for item in body["inputs"]:
            words = []
            for segment in item["content"]:
                if segment["type"] == "text":
                    words.append(segment["text"])
                    text_tokens += count_tokens(segment["text"])
                elif segment["type"] == "image_base64":
                    data = base64.b64decode(segment["image_base64"].split(",", 1)[1])
                    words.append(image_words(data))
                    pixels += 1000
                else:
                    return self.error_reply(400, f"unsupported segment type {segment['type']}")
            texts.append(" ".join(words))
        usage = {
            "text_tokens": text_tokens,
            "image_pixels": pixels,
            "video_pixels": 0,
            "total_tokens": text_tokens + pixels // 560,
        }
        return self._answer(body, texts, usage)

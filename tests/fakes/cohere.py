"""Fake Cohere v2 API: `/v2/embed` with texts, images or inputs (base URL for the SDK: `fake.url`)."""

from __future__ import annotations

import base64

import numpy as np

from .base import DEFAULT_DIMENSION, FakeServer, Reply, Request, bag_of_words, count_tokens, image_words, route


def data_uri_bytes(uri: str) -> bytes:
    return base64.b64decode(uri.split(",", 1)[1])


class FakeCohere(FakeServer):
    def error_reply(self, status: int, message: str = "error", headers: dict | None = None) -> Reply:
        return Reply(status, {"message": message}, headers or {})

    @route("POST", r"/v2/embed")
    def embed(self, request: Request) -> Reply:
        body = request.json
        texts: list[str] = []
        images = 0
        if "texts" in body:
            texts = list(body["texts"])
        elif "images" in body:
            texts = [image_words(data_uri_bytes(uri)) for uri in body["images"]]
            images = len(texts)
        elif "inputs" in body:
            for item in body["inputs"]:
                words = []
                for part in item["content"]:
                    if part["type"] == "text":
                        words.append(part["text"])
                    elif part["type"] == "image_url":
                        words.append(image_words(data_uri_bytes(part["image_url"]["url"])))
                        images += 1
                texts.append(" ".join(words))
        if len(texts) > 96:
            return self.error_reply(400, "invalid request: total number of texts must be at most 96")
        dimension = body.get("output_dimension") or DEFAULT_DIMENSION
        vectors = [bag_of_words(t, dimension) for t in texts]
        embeddings = {}
        for kind in body.get("embedding_types") or ["float"]:
            if kind == "float":
                embeddings["float"] = [[float(x) for x in v] for v in vectors]
            elif kind == "base64":
                embeddings["base64"] = [base64.b64encode(np.asarray(v, "<f4").tobytes()).decode() for v in vectors]
        tokens = sum(count_tokens(t) for t in texts)
        return Reply(
            200,
            {
                "id": f"emb-{len(self.requests)}",
                "response_type": "embeddings_by_type",
                "embeddings": embeddings,
                "texts": body.get("texts", []),
                "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": tokens, "images": images}},
            },
        )

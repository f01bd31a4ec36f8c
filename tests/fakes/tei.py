"""A fake Hugging Face text-embeddings-inference (TEI) server, as its HTTP clients see it.

Routes and schemas from TEI's router (router/src/http/server.rs, types.rs): `GET /info` (model_id, model_sha,
model_dtype, model_type, max_input_length, max_client_batch_size, auto_truncate, ...), `POST /tokenize`
({"inputs", "add_special_tokens"} -> [[{"id", "text", "special", "start", "stop"}]]), `POST /decode`
({"ids", "skip_special_tokens"} -> ["text"]), `POST /rerank` ({"query", "texts", "truncate", "raw_scores",
"return_text", "truncation_direction"} -> [{"index", "score", "text"?}] sorted by score), and the OpenAI-compatible
`POST /v1/embeddings` ({"input", "model", "encoding_format", "dimensions", "user"} -> {"object": "list", "data":
[{"object": "embedding", "embedding", "index"}], "model", "usage": {"prompt_tokens", "total_tokens"}}). There is no
`/v1/models` (404). Errors: {"error", "error_type"}; the OpenAI route's {"message", "code", "error_type"}. An input
over max_input_length without truncation is refused 413 as TEI refuses it. Started with a key (`api_key=`, TEI's
--api-key / API_KEY), every route it serves but /health, /ping and /metrics needs it (router/src/http/server.rs:
the auth layer wraps the routes, not the public ones, nor a path it does not serve); without it, 401 with an
empty body. Tokens, vectors and scores as in
fakes/openai_compat.py.
"""

from __future__ import annotations

import math

from .base import Reply, Request, bag_of_words, route
from .openai_compat import FakeOpenAICompatible
from .rerankers import relevance

# The routes TEI's auth layer wraps (a path it does not serve, /v1/models among them, is a 404 to anyone)
TEI_ROUTES = {"/info", "/embed", "/embed_all", "/embed_sparse", "/predict", "/rerank", "/similarity", "/tokenize"}
TEI_ROUTES |= {"/decode", "/embeddings", "/v1/embeddings", "/vertex", "/invocations"}


def tei_error(status: int, message: str, kind: str = "validation") -> Reply:
    return Reply(status, {"error": message, "error_type": kind})


class FakeTEI(FakeOpenAICompatible):
    def __init__(self, model: str = "BAAI/bge-reranker-v2-m3", *, sha: str = "953dc6f6" * 5, **kwargs) -> None:
        super().__init__(model, **kwargs)
        self.sha = sha

    def guarded(self, path: str) -> bool:  # type: ignore[override]
        return path in TEI_ROUTES

    def unauthorized(self) -> Reply:
        return Reply(401, raw=b"", headers={"Content-Type": "text/plain"})

    def error_reply(self, status: int, message: str = "error", headers: dict | None = None) -> Reply:
        reply = tei_error(status, message, "overloaded" if status == 429 else "backend")
        reply.headers = headers or {}
        return reply

    # TEI lists no models and has no /score, /detokenize: these routes of the vLLM fake are not served here
    def models(self, request: Request) -> Reply:  # type: ignore[override]
        return self.error_reply(404, "not found")

    def score(self, request: Request) -> Reply:  # type: ignore[override]
        return self.error_reply(404, "not found")

    def detokenize(self, request: Request) -> Reply:  # type: ignore[override]
        return self.error_reply(404, "not found")

    @route("GET", r"/info")
    def info(self, request: Request) -> Reply:
        return Reply(
            200,
            {
                "model_id": self.model,
                "model_sha": self.sha,
                "model_dtype": "float16",
                "model_type": {"reranker": {"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}}},
                "max_concurrent_requests": 512,
                "max_input_length": self.max_model_len,
                "max_batch_tokens": 16384,
                "max_client_batch_size": 32,
                "auto_truncate": False,
                "tokenization_workers": 4,
                "version": "1.8.0",
            },
        )

    @route("POST", r"/tokenize")
    def tokenize(self, request: Request) -> Reply:  # type: ignore[override]
        body = request.json
        text = body.get("inputs")
        if not isinstance(text, str):
            return tei_error(422, "inputs must be a string here")
        tokens, position = [], 0
        for token_id in self.tokens(text):
            piece = self.decode([token_id])
            tokens.append(
                {
                    "id": token_id,
                    "text": piece.strip(),
                    "special": False,
                    "start": position,
                    "stop": position + len(piece),
                }
            )
            position += len(piece)
        return Reply(200, [tokens])

    @route("POST", r"/decode")
    def decode_route(self, request: Request) -> Reply:
        ids = request.json.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            return tei_error(422, "ids must be a list of token ids")
        return Reply(200, [self.decode(ids)])

    @route("POST", r"/rerank")
    def rerank(self, request: Request) -> Reply:  # type: ignore[override]
        body = request.json
        unknown = set(body) - {"query", "texts", "truncate", "raw_scores", "return_text", "truncation_direction"}
        if unknown:
            return tei_error(422, f"Failed to deserialize the JSON body: unknown field `{sorted(unknown)[0]}`")
        texts = body.get("texts")
        if not isinstance(body.get("query"), str) or not isinstance(texts, list) or not texts:
            return tei_error(422, "`texts` cannot be empty")
        if len(texts) > 32:
            return tei_error(413, f"batch size {len(texts)} > maximum allowed batch size 32")
        for text in texts:
            length = self._pair_tokens(body["query"], text)
            if length > self.max_model_len and not body.get("truncate"):
                return tei_error(413, f"`inputs` must have less than {self.max_model_len} tokens. Given: {length}")
        self._work()
        with self._lock:
            self.scored.append((body["query"], list(texts)))
        raw = [4.0 * (relevance(body["query"], t) - 0.5) for t in texts]
        scores = raw if body.get("raw_scores") else [1.0 / (1.0 + math.exp(-r)) for r in raw]
        ranks = sorted(({"index": i, "score": s} for i, s in enumerate(scores)), key=lambda r: -r["score"])
        return Reply(200, ranks)

    @route("POST", r"/v1/embeddings")
    def embeddings(self, request: Request) -> Reply:  # type: ignore[override]
        body = request.json
        raw = body.get("input")
        inputs = [raw] if isinstance(raw, str) else raw
        if not isinstance(inputs, list) or not inputs:
            return Reply(422, {"message": "input must not be empty", "code": 422, "error_type": "validation"})
        counts = [len(self.tokens(t)) for t in inputs]
        self._work()
        with self._lock:
            self.embed_inputs.append(list(inputs))
        data = [
            {"object": "embedding", "embedding": [float(x) for x in bag_of_words(t, self.width)], "index": i}
            for i, t in enumerate(inputs)
        ]
        usage = {"prompt_tokens": sum(counts), "total_tokens": sum(counts)}
        return Reply(200, {"object": "list", "data": data, "model": self.model, "usage": usage})

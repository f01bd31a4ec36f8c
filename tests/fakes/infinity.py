"""A fake Infinity server (michaelfeil/infinity, `infinity_emb v2`), as its HTTP clients see it.

Routes and schemas from infinity_emb/infinity_server.py and fastapi_schemas/pymodels.py (url_prefix "", the
default): `GET /health` -> {"unix"}; `GET /models` -> {"object": "list", "data": [ModelInfo: id, stats, object
"model", owned_by "infinity", created, backend, capabilities]} - no maximum length, no revision; `POST /rerank`
(RerankInput: query, documents, return_documents, raw_scores, model, top_n > 0; other fields ignored) ->
ReRankResult {"object": "rerank", "results": [{"relevance_score", "index"}] sorted by score and cut to top_n,
"model", "usage": {"prompt_tokens", "total_tokens"}, "id", "created"}; `POST /embeddings`. There is no
/tokenize, /detokenize or /score: FastAPI's 404 {"detail": "Not Found"}. Inputs are stripped of surrounding
whitespace (INPUT_STRING: strip_whitespace=True), and a pair longer than the model's length is cut without a
word (the cross-encoder's tokenizer: truncation="longest_first"): `truncated` counts them. Errors: OpenAIException
{"error": {"message", "type", "param", "code"}}. Started with a key (`api_key=`, INFINITY_API_KEY / --api-key),
every route but /health (and the docs) needs it: 401 {"detail": "Unauthorized"} with `WWW-Authenticate: Bearer`.
Tokens, scores and vectors as in fakes/openai_compat.py.
"""

from __future__ import annotations

import math
import time
import uuid

from .base import Reply, Request, route
from .openai_compat import FakeOpenAICompatible, openai_error
from .rerankers import relevance


class FakeInfinity(FakeOpenAICompatible):
    def __init__(self, model: str = "mixedbread-ai/mxbai-rerank-xsmall-v1", *, max_length: int = 512, **kwargs) -> None:
        super().__init__(model, max_model_len=max_length, tokenizer_routes=False, **kwargs)
        self.truncated = 0  # pairs the server cut without a word

    def guarded(self, path: str) -> bool:  # type: ignore[override]
        return path not in ("/health", "/docs", "/openapi.json")

    def unauthorized(self) -> Reply:
        return Reply(401, {"detail": "Unauthorized"}, headers={"WWW-Authenticate": "Bearer"})

    def error_reply(self, status: int, message: str = "error", headers: dict | None = None) -> Reply:
        if status == 404:
            return Reply(404, {"detail": "Not Found"}, headers or {})
        reply = openai_error(status, message, None)
        reply.headers = headers or {}
        return reply

    # Infinity lists its models at /models (no /v1 unless --url-prefix /v1), and has no tokenizer routes or /score:
    # these routes of the vLLM fake are not served here (no route: 404).
    def models(self, request: Request) -> Reply:  # type: ignore[override]
        return self.error_reply(404)

    def score(self, request: Request) -> Reply:  # type: ignore[override]
        return self.error_reply(404)

    @route("GET", r"/health")
    def health(self, request: Request) -> Reply:
        return Reply(200, {"unix": time.time()})

    @route("GET", r"/models")
    def infinity_models(self, request: Request) -> Reply:
        card = {
            "id": self.model,
            "stats": {"queue_fraction": 0.0, "queue_absolute": 0, "results_pending": 0, "batch_size": 32},
            "object": "model",
            "owned_by": "infinity",
            "created": self.created,
            "backend": "torch",
            "capabilities": ["rerank"],
        }
        return Reply(200, {"data": [card], "object": "list"})

    def _cut_pair(self, query: str, document: str) -> tuple[str, str]:
        """The pair as the model sees it: the longer text loses its last token until the pair fits."""
        q, d = self.tokens(query), self.tokens(document)
        limit = self.max_model_len - 4  # <s> q </s></s> d </s>
        if len(q) + len(d) <= limit:
            return query, document
        with self._lock:
            self.truncated += 1
        while len(q) + len(d) > limit:
            if len(d) >= len(q):
                d.pop()
            else:
                q.pop()
        return self.decode(q), self.decode(d)

    @route("POST", r"/rerank")
    def rerank(self, request: Request) -> Reply:  # type: ignore[override]
        body = request.json
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return Reply(422, {"detail": [{"type": "missing", "loc": ["body", "query"], "msg": "Field required"}]})
        documents = body.get("documents")
        if not isinstance(documents, list) or not documents or not all(isinstance(d, str) for d in documents):
            return Reply(422, {"detail": [{"type": "list_type", "loc": ["body", "documents"], "msg": "bad list"}]})
        if body.get("model", "default/not-specified") not in (self.model, "default/not-specified"):
            return self.error_reply(400, f"Invalid model: {body.get('model')}")
        top_n = body.get("top_n")
        if top_n is not None and (not isinstance(top_n, int) or top_n <= 0):
            return Reply(422, {"detail": [{"type": "greater_than", "loc": ["body", "top_n"], "msg": "> 0"}]})
        query = body["query"].strip()
        pairs = [self._cut_pair(query, d.strip()) for d in documents]
        self._work()
        with self._lock:
            self.scored.append((body["query"], list(documents)))
        raw = [4.0 * (relevance(q, d) - 0.5) for q, d in pairs]
        scores = raw if body.get("raw_scores") else [1.0 / (1.0 + math.exp(-r)) for r in raw]
        order = sorted(range(len(documents)), key=lambda i: -scores[i])[: top_n or len(documents)]
        usage = sum(len(self.tokens(q)) + len(self.tokens(d)) + 4 for q, d in pairs)
        return Reply(
            200,
            {
                "object": "rerank",
                "results": [{"relevance_score": scores[i], "index": i} for i in order],
                "model": self.model,
                "usage": {"prompt_tokens": usage, "total_tokens": usage},
                "id": f"infinity-{uuid.uuid4()}",
                "created": int(time.time()),
            },
        )

    def embeddings(self, request: Request) -> Reply:  # type: ignore[override]  # not at /v1/embeddings
        return self.error_reply(404)

    @route("POST", r"/embeddings")
    def infinity_embeddings(self, request: Request) -> Reply:
        return FakeOpenAICompatible.embeddings(self, request)

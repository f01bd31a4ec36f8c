"""A fake OpenAI-compatible server: `GET /v1/models`, `POST /v1/embeddings`, and the pooling routes
`POST /rerank` (also `/v1/rerank`, `/v2/rerank`), `POST /score` (also `/v1/score`), `POST /tokenize`,
`POST /detokenize` of vLLM 0.33.0. Base URL for the OpenAI SDK: `fake.url + "/v1"`.

Schemas (request fields, response fields, error bodies, usage) follow OpenAI's embeddings API and
vLLM 0.33.0's protocol models, read from the wheel (`pip download vllm==0.33.0 --no-deps`):
- entrypoints/serve/engine/protocol.py: `ModelCard` (id, object "model", created, owned_by "vllm",
  root, parent, max_model_len, permission), `ModelList`, `ErrorResponse` = {"error": {message, type,
  param, code}}, `UsageInfo` (prompt_tokens, total_tokens, completion_tokens, prompt_tokens_details).
- entrypoints/pooling/embed/protocol.py: `EmbeddingCompletionRequest` (model, input: str | list[str] |
  token ids, dimensions, encoding_format "float" | "base64", user, truncate_prompt_tokens, ...),
  `EmbeddingResponse` (id "embd-...", object "list", created, model, data[{index, object "embedding",
  embedding: list[float] | base64 str}], usage).
- entrypoints/pooling/scoring/protocol.py: `RerankRequest` (model, query, documents, top_n >= 0,
  max_tokens_per_doc, truncate_prompt_tokens, ...), `RerankResponse` (id, model, usage{prompt_tokens,
  total_tokens}, results[{index, document{text}, relevance_score}], sorted by score, cut to top_n);
  `ScoreTextRequest` (text_1, text_2) / `ScoreQueriesDocumentsRequest` (queries, documents),
  `ScoreResponse` (id, object "list", created, model, data[{index, object "score", score}], usage).
- entrypoints/serve/tokenize/protocol.py: `TokenizeResponse` (count, max_model_len, tokens,
  token_strs), `DetokenizeRequest` (model, tokens) -> `DetokenizeResponse` (prompt).
A request with a field the schema does not have is refused 400 (OpenAI's behaviour; vLLM would only
warn), so the client is held to the documented fields. Started with a key (`api_key=`, vLLM's --api-key or
VLLM_API_KEY), only the paths vLLM 0.33.0 guards need it (entrypoints/serve/middleware/authenticate.py:
GUARDED_PREFIX = /v1, /v2, /inference, /cohere; a Bearer token, the scheme in any case): /v1/models,
/v1/embeddings, /v1/rerank and /v1/score are refused 401 {"error": "Unauthorized"} without it, while /rerank,
/score, /tokenize, /detokenize and /classify at the root are served to anyone. `tokenizer_routes=False`: a
Cohere/Jina-style server with no /tokenize or /detokenize (404). A prompt longer than max_model_len is refused
400 as vLLM refuses it. Tokens: words and single punctuation marks (each a token, ids given on first
sight), so truncation is exact and checkable.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import re
import threading
import time
import uuid

import numpy as np

from .base import FakeServer, Reply, Request, bag_of_words, route
from .rerankers import relevance

PIECE = re.compile(r"\s*(\w+|[^\w\s])", re.UNICODE)

EMBED_FIELDS = {"model", "input", "dimensions", "encoding_format", "user", "truncate_prompt_tokens"}
RERANK_FIELDS = {"model", "query", "documents", "top_n", "max_tokens_per_doc", "truncate_prompt_tokens"}
SCORE_FIELDS = {"model", "text_1", "text_2", "queries", "documents", "max_tokens_per_doc", "truncate_prompt_tokens"}


def openai_error(status: int, message: str, kind: str = "BadRequestError", param: str | None = None) -> Reply:
    return Reply(status, {"error": {"message": message, "type": kind, "param": param, "code": status}})


VLLM_GUARDED = ("/v1", "/v2", "/inference", "/cohere")  # vLLM 0.33.0's GUARDED_PREFIX


def vllm_guarded(path: str) -> bool:
    return path.startswith(VLLM_GUARDED)


_VOCAB: dict[str, int] = {}  # one tokenizer for every fake in the process: replicas agree on ids, as real ones do
_PIECES: dict[int, str] = {}
_VOCAB_LOCK = threading.Lock()


class FakeOpenAICompatible(FakeServer):
    """One served model. `width` is its native embedding width; `latency` seconds per request, served one
    request at a time when `serial` (a GPU's worth of capacity: concurrency does not help)."""

    def __init__(
        self,
        model: str = "intfloat/e5-small-v2",
        *,
        width: int = 32,
        max_model_len: int = 512,
        root: str | None = None,
        latency: float = 0.0,
        serial: bool = False,
        matryoshka: bool = True,
        scorer: bool = True,
        api_key: str | None = None,
        tokenizer_routes: bool = True,
    ) -> None:
        super().__init__()
        self.api_key, self.tokenizer_routes = api_key, tokenizer_routes
        self.model, self.width, self.max_model_len = model, width, max_model_len
        self.root = root or model
        self.latency, self.serial, self.matryoshka, self.scorer = latency, serial, matryoshka, scorer
        self.created = int(time.time())
        self._serial_lock = threading.Lock()
        self.width_after: tuple[int, int] | None = None  # (after n embedding requests, new width)
        self.embed_inputs: list[list[str]] = []  # every /v1/embeddings request's inputs, in arrival order
        self.scored: list[tuple[str, list[str]]] = []  # every /rerank or /score call's query and documents
        self.answered = 0  # embedding requests answered
        self.received = 0  # embedding requests received
        self.die_after: int | None = None  # the process exits (a killed replica) on receiving request die_after + 1
        self.answer_log: str | None = None  # a file that gets one JSON line per embedding answer written in full

    def guarded(self, path: str) -> bool:
        return vllm_guarded(path)

    def error_reply(self, status: int, message: str = "error", headers: dict | None = None) -> Reply:
        kinds = {400: "BadRequestError", 404: "NotFoundError", 429: "RateLimitError", 500: "InternalServerError"}
        reply = openai_error(status, message, kinds.get(status, "ServiceUnavailableError"))
        reply.headers = headers or {}
        return reply

    # -- tokenizer ------------------------------------------------------------------------------------
    def tokens(self, text: str) -> list[int]:
        ids = []
        with _VOCAB_LOCK:
            for match in PIECE.finditer(text):
                piece = match.group(0)
                if piece not in _VOCAB:
                    _VOCAB[piece] = len(_VOCAB) + 1000
                    _PIECES[_VOCAB[piece]] = piece
                ids.append(_VOCAB[piece])
        return ids

    def decode(self, ids: list[int]) -> str:
        return "".join(_PIECES[i] for i in ids)

    # -- shared checks --------------------------------------------------------------------------------
    def _work(self) -> None:
        if self.serial:
            with self._serial_lock:
                time.sleep(self.latency)
        elif self.latency:
            time.sleep(self.latency)

    def _check(self, body, fields: set[str]) -> Reply | None:
        if not isinstance(body, dict):
            return openai_error(400, "the body is not a JSON object")
        unknown = sorted(set(body) - fields)
        if unknown:
            return openai_error(400, f"Unrecognized request argument supplied: {unknown[0]}", param=unknown[0])
        if body.get("model") not in (None, self.model):
            return openai_error(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError", "model")
        return None

    def card(self) -> dict:
        return {
            "id": self.model,
            "object": "model",
            "created": self.created,
            "owned_by": "vllm",
            "root": self.root,
            "parent": None,
            "max_model_len": self.max_model_len,
            "permission": [{"id": f"modelperm-{uuid.uuid4().hex}", "object": "model_permission"}],
        }

    @route("GET", r"/v1/models")
    def models(self, request: Request) -> Reply:
        return Reply(200, {"object": "list", "data": [self.card()]})

    # -- embeddings -----------------------------------------------------------------------------------
    def vector(self, text: str, width: int, dimensions: int | None) -> np.ndarray:
        vector = bag_of_words(text, width)
        if dimensions:
            vector = vector[:dimensions]
            norm = float(np.linalg.norm(vector))
            vector = vector / norm if norm else vector
        return vector

    @route("POST", r"/v1/embeddings")
    def embeddings(self, request: Request) -> Reply:
        body = request.json
        refused = self._check(body, EMBED_FIELDS)
        if refused is not None:
            return refused
        raw = body.get("input")
        inputs = [raw] if isinstance(raw, str) else raw
        if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) for t in inputs):
            return openai_error(400, "input must be a string or a non-empty list of strings", param="input")
        dimensions = body.get("dimensions")
        if dimensions is not None and not self.matryoshka:
            return openai_error(
                400,
                f'Model "{self.model}" does not support matryoshka representation, changing output dimensions '
                "will lead to poor results.",
            )
        if dimensions is not None and not 1 <= dimensions <= self.width:
            return openai_error(400, f"dimensions must be between 1 and {self.width}", param="dimensions")
        fmt = body.get("encoding_format") or "float"
        if fmt not in ("float", "base64"):
            return openai_error(400, f"encoding_format {fmt!r} is not float or base64", param="encoding_format")
        with self._lock:
            self.received += 1
            dying = self.die_after is not None and self.received > self.die_after
        if dying:
            # Killed mid-run: this request and every other one in flight get no answer. Not while an answer
            # is between its write and its line in answer_log (that one would be paid but not logged).
            with self.answer_lock or contextlib.nullcontext():
                os._exit(9)
        counts = [len(self.tokens(t)) for t in inputs]
        if max(counts) > self.max_model_len:
            return openai_error(
                400,
                f"This model's maximum context length is {self.max_model_len} tokens. However, you requested "
                f"{max(counts)} tokens in the input for embedding generation. Please reduce the length of the input.",
            )
        self._work()
        with self._lock:
            self.embed_inputs.append(list(inputs))
            self.answered += 1
            width = self.width
            if self.width_after is not None and self.answered > self.width_after[0]:
                width = self.width_after[1]
        data = []
        for index, text in enumerate(inputs):
            vector = self.vector(text, width, dimensions)
            embedding = (
                base64.b64encode(np.asarray(vector, "<f4").tobytes()).decode()
                if fmt == "base64"
                else [float(x) for x in vector]
            )
            data.append({"index": index, "object": "embedding", "embedding": embedding})
        tokens = sum(counts)
        return Reply(
            200,
            {
                "id": f"embd-{uuid.uuid4().hex}",
                "object": "list",
                "created": int(time.time()),
                "model": self.model,
                "data": data,
                "usage": {
                    "prompt_tokens": tokens,
                    "total_tokens": tokens,
                    "completion_tokens": 0,
                    "prompt_tokens_details": None,
                },
            },
        )

    def after(self, request: Request, reply: Reply) -> None:
        if self.answer_log and request.path.endswith("/embeddings") and reply.status == 200:
            with self._lock, open(self.answer_log, "a", encoding="utf-8") as log:
                log.write(json.dumps(request.json["input"]) + "\n")
                log.flush()

    # -- tokenizer routes -----------------------------------------------------------------------------
    @route("POST", r"/tokenize")
    def tokenize(self, request: Request) -> Reply:
        if not self.tokenizer_routes:
            return self.error_reply(404, "Not Found")
        body = request.json
        refused = self._check(body, {"model", "prompt", "add_special_tokens", "return_token_strs"})
        if refused is not None:
            return refused
        ids = self.tokens(body["prompt"])
        strs = [_PIECES[i] for i in ids] if body.get("return_token_strs") else None
        return Reply(200, {"count": len(ids), "max_model_len": self.max_model_len, "tokens": ids, "token_strs": strs})

    @route("POST", r"/detokenize")
    def detokenize(self, request: Request) -> Reply:
        if not self.tokenizer_routes:
            return self.error_reply(404, "Not Found")
        body = request.json
        refused = self._check(body, {"model", "tokens"})
        if refused is not None:
            return refused
        try:
            return Reply(200, {"prompt": self.decode(body["tokens"])})
        except KeyError as exc:
            return openai_error(400, f"token id {exc} is not in the vocabulary", param="tokens")

    # -- scoring --------------------------------------------------------------------------------------
    def _pair_tokens(self, query: str, document: str) -> int:
        return len(self.tokens(query)) + len(self.tokens(document)) + 4  # <s> q </s></s> d </s>

    def _scores(self, query: str, documents: list[str]) -> tuple[list[float], int] | Reply:
        total = 0
        for document in documents:
            length = self._pair_tokens(query, document)
            if length > self.max_model_len:
                return openai_error(
                    400,
                    f"This model's maximum context length is {self.max_model_len} tokens. However, you requested "
                    f"{length} tokens in the input for score. Please reduce the length of the input.",
                )
            total += length
        self._work()
        with self._lock:
            self.scored.append((query, list(documents)))
        scores = [1.0 / (1.0 + math.exp(-4.0 * (relevance(query, d) - 0.5))) for d in documents]
        return scores, total

    @route("POST", r"/(?:v1/|v2/)?rerank")
    def rerank(self, request: Request) -> Reply:
        body = request.json
        refused = self._check(body, RERANK_FIELDS)
        if refused is not None:
            return refused
        if not self.scorer:
            return openai_error(400, "The model does not support Rerank (Score) API")
        documents = body.get("documents")
        if not isinstance(body.get("query"), str) or not isinstance(documents, list):
            return openai_error(400, "query must be a string and documents a list")
        top_n = body.get("top_n", 0)
        if not isinstance(top_n, int) or top_n < 0:
            return openai_error(400, "top_n must be an integer >= 0", param="top_n")
        answer = self._scores(body["query"], documents)
        if isinstance(answer, Reply):
            return answer
        scores, tokens = answer
        order = sorted(range(len(documents)), key=lambda i: -scores[i])
        if top_n:
            order = order[:top_n]
        results = [{"index": i, "document": {"text": documents[i]}, "relevance_score": scores[i]} for i in order]
        return Reply(
            200,
            {
                "id": f"rerank-{uuid.uuid4().hex}",
                "model": self.model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                "results": results,
            },
        )

    @route("POST", r"/(?:v1/)?score")
    def score(self, request: Request) -> Reply:
        body = request.json
        refused = self._check(body, SCORE_FIELDS)
        if refused is not None:
            return refused
        if not self.scorer:
            return openai_error(400, "The model does not support Score API")
        query = body.get("text_1", body.get("queries"))
        documents = body.get("text_2", body.get("documents"))
        if isinstance(documents, str):
            documents = [documents]
        if not isinstance(query, str) or not isinstance(documents, list):
            return openai_error(400, "text_1 must be one string and text_2 a list of strings")
        answer = self._scores(query, documents)
        if isinstance(answer, Reply):
            return answer
        scores, tokens = answer
        return Reply(
            200,
            {
                "id": f"score-{uuid.uuid4().hex}",
                "object": "list",
                "created": int(time.time()),
                "model": self.model,
                "data": [{"index": i, "object": "score", "score": s} for i, s in enumerate(scores)],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0},
            },
        )

"""A fake vLLM 0.33 pooling server for one local reranker, as its HTTP clients see it.

Routes (vllm/entrypoints: serve/instrumentator, serve/tokenize, openai/models, pooling/classify):
`GET /health`, `GET /v1/models`, `POST /tokenize`, `POST /classify` (token-id or text input) and
`GET /metrics` in the Prometheus text exposition (prometheus_client's layout: HELP/TYPE lines,
`_total` counters with `_created` companions, the `vllm:cache_config_info` gauge whose labels are the
cache config).

The "model": a tokenizer that splits special tokens, words, punctuation and whitespace (ids given to
pieces on first sight; the score tokens and the ChatML specials keep their real ids), and logits per
prompt: `logits[marker]` when a marker string occurs in the prompt's document, else a bag-of-words
relevance of document to query. The score head follows vLLM's conversion of the original checkpoints:
`head="yes-no"` (from_2_way_softmax): logit_yes - logit_no, sigmoid unless use_activation is false;
`head="Yes"` (no_post_processing, one label): logit_Yes, sigmoid only if use_activation is true.
Prefix caching, when on, hashes full 16-token blocks as vLLM's KV cache manager does and moves the
counters; with it off, nothing is looked up and the counters stay still.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import deque

from .base import FakeServer, Reply, Request, route
from .openai_compat import vllm_guarded
from .rerankers import relevance

IM_START, IM_END = 151644, 151645
PIECE = re.compile(r"<\|im_start\|>|<\|im_end\|>|\s+|\w+|[^\w\s]", re.UNICODE)
QWEN_PROMPT = re.compile(
    r"\A<\|im_start\|>system\n.*?<\|im_end\|>\n<\|im_start\|>user\n<Instruct>: .*?\n<Query>: (.*?)\n"
    r"<Document>: (.*)<\|im_end\|>\n<\|im_start\|>assistant\n<think>\n\n</think>\n\n\Z",
    re.DOTALL,
)
ZERANK_PROMPT = re.compile(
    r"\A<\|im_start\|>system\n(.*?)<\|im_end\|>\n<\|im_start\|>user\n(.*)<\|im_end\|>\n<\|im_start\|>assistant\n\Z",
    re.DOTALL,
)
BLOCK = 16


def vllm_error(status: int, message: str, kind: str = "BadRequestError") -> Reply:
    return Reply(status, {"error": {"message": message, "type": kind, "param": None, "code": status}})


class FakeVllm(FakeServer):
    def __init__(
        self,
        model_id: str,
        head: str,
        *,
        max_model_len: int = 32_768,
        prefix_caching: bool = False,
        cache_info: str | None = "auto",  # "auto": the truth; "True"/"False": what the gauge claims; None: absent
        metrics: bool = True,
        counters: bool = True,
        stats_lag: int = 0,  # /metrics reads before a finished request shows in the counters
        stats_recorded: bool = True,
        default_use_activation: bool | None = None,
        api_key: str | None = None,  # --api-key / VLLM_API_KEY: only /v1/... needs it (fakes/openai_compat.py)
    ) -> None:
        super().__init__()
        self.api_key = api_key
        assert head in ("yes-no", "Yes")
        self.model_id, self.head, self.max_model_len = model_id, head, max_model_len
        self.prefix_caching, self.cache_info, self.metrics_enabled = prefix_caching, cache_info, metrics
        self.counters, self.stats_lag, self.stats_recorded = counters, stats_lag, stats_recorded
        self.default_use_activation = (head == "yes-no") if default_use_activation is None else default_use_activation
        self.vocab = {"<|im_start|>": IM_START, "<|im_end|>": IM_END, "yes": 9693, "no": 2152, "Yes": 9454}
        self.pieces = {i: p for p, i in self.vocab.items()}
        self.logits: dict[str, dict[str, float]] = {}
        self.prompts: list[str] = []  # every prompt scored, decoded
        self.classify_inputs: list[list[list[int]]] = []
        self.stats = {"queries": 0, "hits": 0, "cached": 0, "finished": 0, "prompt_tokens": 0}
        self._pending: deque[tuple[int, dict[str, int]]] = deque()
        self._blocks: set[tuple] = set()
        self._vocab_lock = threading.Lock()
        self.started = time.time()

    def guarded(self, path: str) -> bool:
        return vllm_guarded(path)

    # -- tokenizer ---------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        with self._vocab_lock:
            ids = []
            for piece in PIECE.findall(text):
                if piece not in self.vocab:
                    self.vocab[piece] = 160_000 + len(self.vocab)
                    self.pieces[self.vocab[piece]] = piece
                ids.append(self.vocab[piece])
            return ids

    def decode(self, ids: list[int]) -> str:
        return "".join(self.pieces[i] for i in ids)

    # -- the model ---------------------------------------------------------------------------------
    def prompt_logits(self, prompt: str) -> dict[str, float]:
        match = (QWEN_PROMPT if self.head == "yes-no" else ZERANK_PROMPT).match(prompt)
        query, document = match.groups() if match else ("", "")
        for marker, logits in self.logits.items():
            if marker in document:
                return logits
        r = relevance(query, document) if match else 0.0
        return {"yes": 4 * r - 2, "no": 2 - 4 * r} if self.head == "yes-no" else {"Yes": 10 * r - 5}

    def score(self, prompt: str, use_activation: bool) -> float:
        logits = self.prompt_logits(prompt)
        x = logits["yes"] - logits["no"] if self.head == "yes-no" else logits["Yes"]
        return 1.0 / (1.0 + math.exp(-x)) if use_activation else x

    def _cache(self, ids: list[int]) -> int:
        """Prefix-cache lookup and insert; the hit tokens (full blocks, at most len - 1)."""
        hashes, parent = [], ()
        for start in range(0, len(ids) - len(ids) % BLOCK, BLOCK):
            parent = (parent, tuple(ids[start : start + BLOCK]))
            hashes.append(hash(parent))
        hit = 0
        for h in hashes:
            if h not in self._blocks:
                break
            hit += BLOCK
        self._blocks.update(hashes)
        return min(hit, len(ids) - 1)

    # -- routes ------------------------------------------------------------------------------------
    @route("GET", r"/health")
    def health(self, request: Request) -> Reply:
        return Reply(200, raw=b"")

    @route("GET", r"/v1/models")
    def models(self, request: Request) -> Reply:
        card = {
            "id": self.model_id,
            "object": "model",
            "created": int(self.started),
            "owned_by": "vllm",
            "root": self.model_id.split("@")[0],
            "parent": None,
            "max_model_len": self.max_model_len,
            "permission": [],
        }
        return Reply(200, {"object": "list", "data": [card]})

    def _check_model(self, body: dict) -> Reply | None:
        if body.get("model") not in (None, self.model_id):
            return vllm_error(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError")
        return None

    @route("POST", r"/tokenize")
    def tokenize(self, request: Request) -> Reply:
        body = request.json
        refused = self._check_model(body)
        if refused:
            return refused
        tokens = self.encode(body["prompt"])
        return Reply(
            200, {"count": len(tokens), "max_model_len": self.max_model_len, "tokens": tokens, "token_strs": None}
        )

    @route("POST", r"/classify")
    def classify(self, request: Request) -> Reply:
        body = request.json
        refused = self._check_model(body)
        if refused:
            return refused
        raw = body["input"]
        if isinstance(raw, str) or (raw and isinstance(raw[0], int)):
            raw = [raw]
        inputs = [self.encode(item) if isinstance(item, str) else list(item) for item in raw]
        for ids in inputs:
            if len(ids) > self.max_model_len:
                return vllm_error(
                    400,
                    f"This model's maximum context length is {self.max_model_len} tokens. However, your prompt "
                    f"contains {len(ids)} input tokens, which exceeds this limit even without any output tokens. "
                    "Please reduce the length of the input prompt.",
                )
        use_activation = body.get("use_activation")
        use_activation = self.default_use_activation if use_activation is None else use_activation
        data = []
        delta = {"queries": 0, "hits": 0, "cached": 0, "finished": 0, "prompt_tokens": 0}
        with self._lock:
            self.classify_inputs.append(inputs)
        for index, ids in enumerate(inputs):
            prompt = self.decode(ids)
            with self._lock:
                self.prompts.append(prompt)
                if self.prefix_caching:
                    hit = self._cache(ids)
                    delta["queries"] += len(ids)
                    delta["hits"] += hit
                    delta["cached"] += hit
            delta["finished"] += 1
            delta["prompt_tokens"] += len(ids)
            data.append(
                {"index": index, "label": None, "probs": [self.score(prompt, use_activation)], "num_classes": 1}
            )
        if self.stats_recorded:
            with self._lock:
                self._pending.append((self.stats_lag, delta))
        total = sum(map(len, inputs))
        return Reply(
            200,
            {
                "id": f"classify-{len(self.classify_inputs)}",
                "object": "list",
                "created": int(time.time()),
                "model": self.model_id,
                "data": data,
                "usage": {"prompt_tokens": total, "total_tokens": total, "completion_tokens": 0},
            },
        )

    @route("GET", r"/metrics")
    def metrics(self, request: Request) -> Reply:
        if not self.metrics_enabled:
            return Reply(404, {"detail": "Not Found"})
        with self._lock:
            kept: deque[tuple[int, dict[str, int]]] = deque()
            for lag, delta in self._pending:
                if lag <= 0:
                    for key, value in delta.items():
                        self.stats[key] += value
                else:
                    kept.append((lag - 1, delta))
            self._pending = kept
            stats = dict(self.stats)
        return Reply(200, raw=self.exposition(stats).encode(), headers={"Content-Type": "text/plain; version=0.0.4"})

    def exposition(self, stats: dict[str, int]) -> str:
        labels = f'engine="0",model_name="{self.model_id}"'
        created = f"{self.started:.7e}"
        lines = [
            "# HELP python_gc_objects_collected_total Objects collected during gc",
            "# TYPE python_gc_objects_collected_total counter",
            'python_gc_objects_collected_total{generation="0"} 1234.0',
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{labels}}} 0.0",
        ]
        if self.cache_info is not None:
            flag = str(self.prefix_caching) if self.cache_info == "auto" else self.cache_info
            info = (
                'block_size="16",cache_dtype="auto",calculate_kv_scales="False",cpu_offload_gb="0",'
                f'enable_prefix_caching="{flag}",engine="0",gpu_memory_utilization="0.9",'
                'is_attention_free="False",kv_cache_memory_bytes="None",mamba_cache_dtype="auto",'
                'num_gpu_blocks="27189",num_gpu_blocks_override="None",prefix_caching_hash_algo="sha256",'
                'sliding_window="None",swap_space="4.0",user_note="say \\"hi\\"\\nbye"'
            )
            lines += [
                "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
                "# TYPE vllm:cache_config_info gauge",
                f"vllm:cache_config_info{{{info}}} 1.0",
            ]

        def counter(name: str, value: float, extra: str = "", doc: str = "") -> None:
            lines.extend(
                [
                    f"# HELP {name}_total {doc}",
                    f"# TYPE {name}_total counter",
                    f"{name}_total{{{labels}{extra}}} {float(value)}",
                    f"# HELP {name}_created {doc}",
                    f"# TYPE {name}_created gauge",
                    f"{name}_created{{{labels}{extra}}} {created}",
                ]
            )

        if self.counters:
            counter("vllm:prefix_cache_queries", stats["queries"], doc="Prefix cache queries, in tokens.")
            counter("vllm:prefix_cache_hits", stats["hits"], doc="Prefix cache hits, in tokens.")
            counter("vllm:prompt_tokens_cached", stats["cached"], doc="Number of cached prompt tokens.")
        counter("vllm:prompt_tokens", stats["prompt_tokens"], doc="Number of prefill tokens processed.")
        for reason in ("stop", "length", "abort", "error"):
            counter(
                "vllm:request_success",
                stats["finished"] if reason == "stop" else 0,
                extra=f',finished_reason="{reason}"',
                doc="Count of successfully processed requests.",
            )
        return "\n".join(lines) + "\n"

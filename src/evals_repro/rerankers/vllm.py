"""Client for the local rerankers (qwen3-8b, zerank-2) served by vLLM replicas.

Endpoint: `POST /classify` with token ids, on the pooling runner that `serve-reranker` starts. The
client builds each prompt from the model spec (local_models.py), tokenizes it with the replica's own
`POST /tokenize`, and cuts only the document when the prompt would not fit the context: the
tokenized head + document is cut to `context - len(tail)` tokens and the template's tail is put back,
which is the model card's recipe (Qwen3: tokenize the body, truncate it to max_length - |prefix| -
|suffix|, wrap with prefix and suffix ids). The query and the prompt are never cut; a query that
leaves no room for a document is an error.

Why not `/score` or `/rerank` with a chat template (vLLM 0.33, entrypoints/pooling/scoring): the
server renders and tokenizes there, `truncate_prompt_tokens` cuts the template's suffix, and
`max_tokens_per_doc` tokenizes the document alone, cuts it and decodes it back to text before the
template is applied, so the counted tokens are not the scored ones. Why not `/v1/completions` on a
generate runner: the score would come out of the sampler's log-probabilities over the whole
vocabulary (plus `--logprobs-mode raw_logits` for zerank), with a decode step inside every timed
call. `/classify` takes the exact token ids and returns the pinned score head's output directly.

Replicas come from `QWEN_RERANK_URLS` / `ZERANK_RERANK_URLS` (comma-separated; default the local
ports of `serve-reranker`), on this machine or others; `VLLM_API_KEY`, when set, is sent as a Bearer token on
every request to every replica. Each request goes to the replica with the fewest requests in flight
(round robin among equals); one that stops answering has its call sent to another at once, with one warning
line naming it (`providers.replicas`). Before its first request a replica must serve the pinned model id and
context, and its tokenizer must map the score tokens to the pinned ids. Calls go through
`providers.retry.call_with_retries`, so attempts, retries, waits and `<name>_call_seconds` (the
whole attempt: tokenization and scoring) are counted exactly as for the hosted rerankers.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..base.context import MethodContext
from ..base.errors import ConfigurationError, DataError, EvalsError, ProviderError, UsageError, choices
from ..base.registry import RERANKERS
from ..providers.plan import Plan
from ..providers.replicas import connection_lost
from .base import ScoredAttempt, plan_self_hosted, positive_option, rerank_with_retries
from .local_models import LOCAL_RERANKERS, QWEN3_8B, ZERANK_2, LocalRerankerSpec
from .vllm_replicas import Replica, replica_set, replica_urls, reset_replica_sets

__all__ = ["VllmReranker", "build", "replica_urls", "reset_replica_sets"]

DEFAULT_TIMEOUT = 600.0  # seconds per attempt: one query's candidates at up to 32k tokens each
DEFAULT_MAX_ATTEMPTS = 6
TOKENIZE_WORKERS = 8  # concurrent /tokenize calls within one rerank call

PROBE_QUERY = "Which maintenance intervals apply to the heat exchanger of a ground-source heat pump?"
PROBE_DOCUMENT = (
    "The heat exchanger of a ground-source heat pump should be inspected once a year. The brine circuit "
    "pressure, the antifreeze concentration and the condition of the filters are checked at the same "
    "visit, and the compressor's operating hours are recorded so that wear can be compared between years."
)


def _start_hint(spec: LocalRerankerSpec) -> str:
    return f"start it with `evals-repro serve-reranker {spec.name} --devices 0`, or point {spec.urls_env} at a replica"


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _tokenize_pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=TOKENIZE_WORKERS, thread_name_prefix="vllm-tokenize")
        return _POOL


class VllmReranker:
    """A Reranker on vLLM replicas serving one of the pinned local models."""

    def __init__(self, spec: LocalRerankerSpec, ctx: MethodContext, urls: list[str] | None = None) -> None:
        import httpx

        from ..providers.settings import ProviderSettings

        self.spec = spec
        self.name = spec.name
        self.model = spec.model_id
        self.ctx = ctx
        self.urls = urls or replica_urls(spec)
        self.replicas = replica_set(spec.name, self.urls)
        options = {k.replace("-", "_"): v for k, v in ctx.options.items()}
        self.settings = ProviderSettings(
            provider=spec.name,  # usage keys qwen3-8b_attempts, ...; a throttle with no budgets
            tokens_per_minute=0,
            requests_per_minute=0,
            min_interval=0.0,
            timeout=positive_option(options, "timeout", DEFAULT_TIMEOUT),
            max_attempts=int(positive_option(options, "max_attempts", DEFAULT_MAX_ATTEMPTS, int)),
            base_url=None,
            max_batch_items=0,
            max_batch_tokens=0,
        )
        from ..providers.keys import server_key

        self.key = server_key("vllm")  # VLLM_API_KEY: what serve-reranker handed the replicas; on every request
        self.client = httpx.Client(timeout=self.settings.timeout, headers=self.key.headers())
        # `run` scores this many queries at once: enough to keep every replica busy
        self.workers = int(options.get("workers") or max(4, 2 * len(self.urls)))

    # -- one replica -------------------------------------------------------------------------------
    def _post(self, replica: Replica, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.client.post(replica.url + path, json=body)
        response.raise_for_status()  # classified by providers.errors_map.classify_http
        return response.json()

    def _tokenize(self, replica: Replica, text: str) -> list[int]:
        answer = self._post(
            replica, "/tokenize", {"model": self.spec.model_id, "prompt": text, "add_special_tokens": False}
        )
        tokens = answer.get("tokens")
        if not isinstance(tokens, list):
            raise ProviderError(
                f"{self.name} replica {replica.url}: /tokenize answered without tokens", "check the replica URL"
            )
        return tokens

    def _unusable(self, replica: Replica, why: str) -> ConfigurationError:
        return ConfigurationError(f"{self.name} replica {replica.url} {why}", _start_hint(self.spec))

    def _verify(self, replica: Replica) -> None:
        """The replica serves the pinned model and context, and tokenizes the score tokens to the pinned ids."""
        import httpx

        spec = self.spec
        try:
            response = self.client.get(replica.url + "/v1/models", timeout=30.0)
            if response.status_code in (401, 403):
                raise ConfigurationError(
                    f"{self.name} replica {replica.url} refused the request (HTTP {response.status_code})",
                    self.key.hint(),
                )
            response.raise_for_status()
            cards = response.json().get("data") or []
            served = {card.get("id"): card for card in cards}
            card = served.get(spec.model_id)
            if card is None:
                raise self._unusable(
                    replica,
                    f"serves {choices(sorted(map(str, served))) or 'no model'}, not {spec.model_id}",
                )
            if card.get("max_model_len") != spec.context_tokens:
                raise self._unusable(
                    replica, f"has a {card.get('max_model_len')}-token context, not the pinned {spec.context_tokens}"
                )
            for token, token_id in spec.score_tokens.items():
                got = self._tokenize(replica, token)
                if got != [token_id]:
                    raise self._unusable(replica, f"tokenizes '{token}' as {got}, not [{token_id}]: wrong tokenizer")
            replica.tail_ids = tuple(self._tokenize(replica, spec.prompt_parts("q")[1]))
        except httpx.HTTPError as exc:
            raise self._unusable(replica, f"is not usable ({type(exc).__name__}: {exc})") from None
        except ValueError:
            raise self._unusable(replica, "answered something that is not vLLM's JSON") from None

    def ensure_verified(self, replica: Replica) -> None:
        with replica.lock:
            if replica.tail_ids is None:
                self._verify(replica)

    def preflight(self) -> None:
        """Verify every replica now (before a study sends anything): one clear line naming a bad one."""
        for replica in self.replicas.replicas:
            self.ensure_verified(replica)

    # -- prompts -----------------------------------------------------------------------------------
    def _prompt_ids(
        self, replica: Replica, head: str, tail: str, document: str, head_tokens: Callable[[], int]
    ) -> tuple[list[int], bool]:
        """Token ids of one prompt, the document cut when it would not fit; and whether it was cut."""
        ids = self._tokenize(replica, head + document + tail)
        limit = self.spec.context_tokens
        if len(ids) <= limit:
            return ids, False
        tail_ids = list(replica.tail_ids or ())
        if ids[len(ids) - len(tail_ids) :] != tail_ids:
            raise ProviderError(
                f"{self.name} replica {replica.url}: the prompt's tokens do not end with the template's tail",
                "the replica's tokenizer is not the pinned one; restart it with serve-reranker",
            )
        budget = limit - len(tail_ids)
        if head_tokens() >= budget:
            raise DataError(
                f"{self.name}: the query and prompt take {head_tokens()} tokens, leaving no room for a document "
                f"in the {limit:,}-token context",
                "shorten the query (only documents are truncated)",
            )
        return ids[:budget] + tail_ids, True

    def _prompts(
        self, replica: Replica, query: str, documents: list[str], instruction: str | None
    ) -> tuple[list[list[int]], int]:
        head, tail = self.spec.prompt_parts(query, instruction)
        counted: list[int] = []
        lock = threading.Lock()

        def head_tokens() -> int:  # the query's share, counted once per call and only when a document is cut
            with lock:
                if not counted:
                    counted.append(len(self._tokenize(replica, head)))
                return counted[0]

        results = list(
            _tokenize_pool().map(lambda doc: self._prompt_ids(replica, head, tail, doc, head_tokens), documents)
        )
        return [ids for ids, _ in results], sum(1 for _, cut in results if cut)

    # -- scoring -----------------------------------------------------------------------------------
    def _classify(self, replica: Replica, prompts: list[list[int]]) -> tuple[list[float], int | None]:
        answer = self._post(
            replica,
            "/classify",
            {
                "model": self.spec.model_id,
                "input": prompts,
                "use_activation": self.spec.use_activation,
                "add_special_tokens": False,
            },
        )
        data = answer.get("data")
        if not isinstance(data, list) or len(data) != len(prompts):
            raise ProviderError(
                f"{self.name} replica {replica.url}: /classify returned {len(data) if isinstance(data, list) else 0} "
                f"results for {len(prompts)} prompts",
                "rerun; report it if it persists",
            )
        scores: list[float | None] = [None] * len(prompts)
        for item in data:
            index, probs = item.get("index"), item.get("probs")
            if not isinstance(index, int) or not 0 <= index < len(prompts) or scores[index] is not None:
                raise ProviderError(
                    f"{self.name} replica {replica.url}: /classify returned index {index!r} for {len(prompts)} prompts",
                    "rerun; report it if it persists",
                )
            if not isinstance(probs, list) or len(probs) != 1:
                raise self._unusable(
                    replica,
                    f"returns {len(probs) if isinstance(probs, list) else 'no'} values per prompt, not the pinned "
                    "one-logit score head (it was not started with the spec's --hf-overrides)",
                )
            value = float(probs[0])
            if not math.isfinite(value):
                raise ProviderError(f"{self.name} replica {replica.url}: non-finite score {value}", "rerun")
            scores[index] = value
        usage = answer.get("usage") or {}
        return [float(s) for s in scores if s is not None], usage.get("prompt_tokens")

    def rerank(self, query: str, documents: list[str], instruction: str | None = None) -> list[float]:
        if not documents:
            return []

        def on(replica: Replica) -> ScoredAttempt:
            self.ensure_verified(replica)
            prompts, cut = self._prompts(replica, query, documents, instruction)
            scores, tokens = self._classify(replica, prompts)
            return scores, tokens if tokens is not None else sum(map(len, prompts)), cut

        def attempt() -> ScoredAttempt:  # a replica that stopped answering: the call goes to another at once
            return self.replicas.call(on, connection_lost, self.name)  # type: ignore[arg-type]

        return rerank_with_retries(
            self.settings, self.ctx.usage, len(documents), attempt, f"rerank {self.spec.checkpoint}", self.model
        )

    def plan(
        self, query_tokens: int, doc_tokens: list[int], plan: Plan, what: str = "rerank", prior: Any = None
    ) -> None:
        """One /classify request per query, on your own replicas: self-hosted, no price."""
        plan_self_hosted(self, query_tokens, doc_tokens, plan, what, None)

    # -- latency preflight -------------------------------------------------------------------------
    def verify_prefix_cache_off(self) -> list[dict[str, Any]]:
        """Evidence, per replica, that its prefix cache is off (raises CacheCheckFailed naming a replica)."""
        from .vllm_metrics import cache_check_failed, verify_prefix_cache_off

        self.preflight()
        evidence = []
        for replica in self.replicas.replicas:
            (probe_ids,), _ = self._prompts(replica, PROBE_QUERY, [PROBE_DOCUMENT], None)

            def read_metrics(replica: Replica = replica) -> str | None:
                response = self.client.get(replica.url + "/metrics", timeout=30.0)
                if response.status_code == 404:
                    return None
                response.raise_for_status()
                return response.text

            def probe(replica: Replica = replica, ids: list[int] = probe_ids) -> int:
                self._classify(replica, [ids])
                return len(ids)

            try:
                evidence.append(verify_prefix_cache_off(self.name, replica.url, read_metrics, probe))
            except EvalsError:
                raise
            except Exception as exc:  # an HTTP failure while checking: the cache cannot be verified
                raise cache_check_failed(
                    self.name, replica.url, f"checking its prefix cache failed ({type(exc).__name__}: {exc})"
                ) from None
        return evidence

    def describe(self) -> dict[str, Any]:
        return {
            "reranker": self.name,
            "kind": "local cross-encoder on vLLM",
            **self.spec.describe(),
            "endpoint": "POST /classify with token ids (pooling runner, prefix caching disabled)",
            "truncation": "document only, to fit the context counted by the server's /tokenize; "
            "counted in usage as rerank_documents_truncated",
            "replicas": len(self.urls),
        }


@RERANKERS.register(
    "qwen3-8b",  # QWEN3_8B.name, spelled out so that listing the names reads it from this source without an import
    description=f"{QWEN3_8B.checkpoint} on vLLM replicas ({QWEN3_8B.urls_env}; `evals-repro serve-reranker`)",
    models=(QWEN3_8B.model_id,),
    study_models={QWEN3_8B.name: QWEN3_8B.model_id},  # the study records checkpoint@revision as the model id
)
@RERANKERS.register(
    "zerank-2",  # ZERANK_2.name, likewise
    description=f"{ZERANK_2.checkpoint} on vLLM replicas ({ZERANK_2.urls_env}; `evals-repro serve-reranker`)",
    models=(ZERANK_2.model_id,),
    study_models={ZERANK_2.name: ZERANK_2.model_id},
)
def build(name: str, model: str | None, ctx: MethodContext) -> VllmReranker:
    """Registry factory: `+qwen3-8b@50`; the model may only name the pinned checkpoint."""
    spec = LOCAL_RERANKERS[name]
    if model is not None and model not in (spec.model_id, spec.checkpoint):
        raise UsageError(
            f"reranker '{name}' serves only {spec.model_id}, not '{model}'",
            f"write +{name}@<depth> (the checkpoint is pinned in rerankers/local_models.py)",
        )
    return VllmReranker(spec, ctx)

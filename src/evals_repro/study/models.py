"""Study model names -> (reranker, provider model id), and building one reranker per worker.

Each worker gets its own reranker instance with its own `Usage`, so the attempts and waits of one
call can be read off exactly; throttles stay shared per provider (providers.throttle).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError, choices
from ..rerankers.local_models import LOCAL_RERANKERS
from ..retrieval.base import MethodContext
from ..usage import Usage

STUDY_MODELS: dict[str, tuple[str, str | None]] = {
    "mixedbread": ("mixedbread", "mixedbread-ai/mxbai-rerank-large-v2"),
    "voyage": ("voyage", "rerank-2.5"),
    "voyage-lite": ("voyage", "rerank-2.5-lite"),
    "cohere-pro": ("cohere", "rerank-v4.0-pro"),
    "cohere-fast": ("cohere", "rerank-v4.0-fast"),
    # offline, for running the protocol without keys (bi-encoders: not comparable to the above)
    "minilm": ("minilm", None),
    "e5": ("multilingual-e5-small", None),
    # local cross-encoders on vLLM: the model id is the pinned checkpoint@revision
    **{name: (name, spec.model_id) for name, spec in LOCAL_RERANKERS.items()},
}
DEFAULT_MODELS = ("mixedbread", "voyage", "cohere-pro", "cohere-fast")


@dataclass(frozen=True)
class StudyModel:
    name: str  # as given on the command line, used in records and reports
    reranker: str  # RERANKERS key, which is also the provider whose throttle and pool it uses
    model: str | None

    @property
    def provider(self) -> str:
        return self.reranker


def parse_models(names: list[str]) -> list[StudyModel]:
    from ..methods import RERANKERS

    models = []
    for name in names:
        if name in STUDY_MODELS:
            reranker, model = STUDY_MODELS[name]
        else:
            reranker, _, model = name.partition(":")
            model = model or None
        if reranker not in RERANKERS:
            raise UsageError(
                f"unknown study model '{name}'",
                f"choose from {choices(sorted(STUDY_MODELS))} or <reranker>:<model> with a reranker from "
                f"{choices(sorted(RERANKERS))}",
            )
        models.append(StudyModel(name, reranker, model))
    return models


def build_reranker(model: StudyModel, cache_dir: Path, options: dict[str, Any]):
    """A fresh reranker with a private Usage (returned alongside) for one worker thread."""
    from ..methods import RERANKERS, _import

    ctx = MethodContext(benchmark="rerank-study", cache_dir=cache_dir, options=dict(options), usage=Usage())
    reranker = _import(RERANKERS[model.reranker].target)(model.reranker, model.model, ctx)
    return reranker, ctx.usage


def preflight(models: list[StudyModel], cache_dir: Path, options: dict[str, Any]) -> dict[str, Any]:
    """Check every model that can be checked before anything is sent (local replicas: model, tokenizer).

    Returns the rerankers built for it, by model name, so that the caller can reuse them.
    """
    built = {}
    for model in models:
        reranker, usage = build_reranker(model, cache_dir, options)
        check = getattr(reranker, "preflight", None)
        if check is not None:
            check()
        built[model.name] = (reranker, usage)
    return built


def call_costs(before: dict[str, float], after: dict[str, float], provider: str) -> dict[str, float]:
    """Attempts, retries, 429s and waits of one call, from the worker's usage counters."""

    def delta(key: str) -> float:
        return after.get(f"{provider}_{key}", 0) - before.get(f"{provider}_{key}", 0)

    return {
        # documents the reranker had to cut to fit its context (hosted: estimated; local: counted)
        "truncated_documents": int(
            after.get("rerank_documents_truncated", 0) - before.get("rerank_documents_truncated", 0)
        ),
        "attempts": int(delta("attempts")),
        "retries": int(delta("retries")),
        "rate_limited": int(delta("rate_limited")),
        "wait_seconds": round(delta("wait_seconds"), 6),
        "tokens": delta("tokens"),
        "call_ms": round(delta("call_seconds") * 1000, 3),
    }

"""Study model names -> (reranker, provider model id), registered beside each reranker, and building one reranker per worker.

Each worker gets its own reranker instance with its own `Usage`, so the attempts and waits of one
call can be read off exactly; throttles stay shared per provider (providers.throttle).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..context import MethodContext
from ..errors import UsageError, choices
from ..usage import Usage
from .candidates import Candidate


def study_models() -> dict[str, tuple[str, str | None]]:
    """Study model name -> (reranker, provider model id), from the aliases each reranker registers
    beside its code (`study_models=...` in `@RERANKERS.register`)."""
    from ..registry import RERANKERS

    return {
        alias: (entry.name, model)
        for entry in RERANKERS.entries()
        for alias, model in (entry.extra.get("study_models") or {}).items()
    }


# The published comparison; `minilm` and `e5` run offline (bi-encoders: for exercising the protocol only).
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
    from ..registry import RERANKERS

    aliases = study_models()
    models = []
    for name in names:
        if name in aliases:
            reranker, model = aliases[name]
        else:
            reranker, _, given = name.partition(":")
            model = given or None
        if reranker not in RERANKERS:
            raise UsageError(
                f"unknown study model '{name}'",
                f"choose from {choices(sorted(aliases))} or <reranker>:<model> with a reranker from "
                f"{choices(RERANKERS.names())}",
            )
        models.append(StudyModel(name, reranker, model))
    return models


def require_model_keys(models: list[StudyModel]) -> None:
    """Every API key the models need, checked at once before any work (one line naming all the missing ones)."""
    from ..providers.keys import require_keys
    from ..registry import RERANKERS

    require_keys([env for env in (RERANKERS.require(m.reranker).key_env for m in models) if env])


def build_reranker(model: StudyModel, cache_dir: Path, options: dict[str, Any], planning: bool = False):
    """A fresh reranker with a private Usage (returned alongside) for one worker thread (a plan's: no client)."""
    from ..registry import RERANKERS

    ctx = MethodContext(
        benchmark="rerank-study", cache_dir=cache_dir, options=dict(options), usage=Usage(), planning=planning
    )
    entry = RERANKERS.require(model.reranker)
    if entry.plugin is not None:  # a plugin's reranker: held to the Reranker protocol, and it takes no :model
        from ..plugins import build_checked

        if model.model is not None:
            raise UsageError(
                f"study model '{model.name}': reranker {model.reranker} ({entry.owner()}) takes no :model",
                f"write {model.reranker}",
            )
        return build_checked(entry, model.reranker, model.model, ctx), ctx.usage
    reranker = entry.factory(model.reranker, model.model, ctx)
    return reranker, ctx.usage


def build_all(models: list[StudyModel], cache_dir: Path, options: dict[str, Any]) -> dict[str, Any]:
    """One reranker (with its Usage) per model, by model name; nothing is sent yet."""
    return {model.name: build_reranker(model, cache_dir, options) for model in models}


def preflight(built: dict[str, Any]) -> None:
    """Check, before anything is sent, every reranker that can be checked (local replicas: model, tokenizer)."""
    for reranker, _ in built.values():
        check = getattr(reranker, "preflight", None)
        if check is not None:
            check()


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


SPENT_FIELDS = ("attempts", "retries", "rate_limited", "wait_seconds", "tokens")


def add_spent(spent: Usage, record: dict[str, Any]) -> None:
    """Count one call record (its `call_costs`) into what a phase spent: the request and its costs."""
    spent.add("requests")
    for key in SPENT_FIELDS:
        if record.get(key):
            spent.add(key, record[key])


def call_record(model: StudyModel, candidate: Candidate) -> dict[str, Any]:
    """The fields that name one reranker call in quality.jsonl and latency.jsonl: the model as given and
    its provider id, and the query. Both phases start every record with them."""
    return {
        "model": model.name,
        "model_id": model.model or "",
        "benchmark": candidate.benchmark,
        "subset": candidate.subset,
        "query_id": candidate.query_id,
    }

"""Study model names -> (reranker, provider model id), registered beside each reranker, and building one reranker per worker.

Each worker gets its own reranker instance with its own `Usage`, so the attempts and waits of one
call can be read off exactly; throttles stay shared per provider (providers.throttle).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.context import MethodContext
from ..base.errors import UsageError, choices
from ..base.usage import Usage
from .candidates import Candidate

if TYPE_CHECKING:
    from ..base.identity import ComponentIdentity, PluginOrigin


def study_models() -> dict[str, tuple[str, str | None]]:
    """Study model name -> (reranker, provider model id), from the aliases each reranker registers
    beside its code (`study_models=...` in `@RERANKERS.register`)."""
    from ..base.registry import RERANKERS

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
    plugin: PluginOrigin | None = None  # a plugin's reranker: where it comes from (None: a built-in)
    component: ComponentIdentity | None = None  # a plugin's reranker: its identity (base/identity.py)

    @property
    def provider(self) -> str:
        return self.reranker

    @property
    def version(self) -> str:
        """A plugin reranker's identity as its rows record it (`plugin`: "acme-search 1.4.0 #3f2a9c1e5b7d", the
        label and a short key of its distribution, version, describe() and sources); "" for a built-in."""
        if self.plugin is None:
            return ""
        assert self.component is not None
        return self.component.tag()

    @property
    def identity(self) -> tuple[str, str, str]:
        """What a recorded row must match to be reused for this model: name, model id and plugin identity
        (a plugin's new version, describe() or sources scores and times it again; the old rows stay on disk, unused)."""
        return (self.name, self.model or "", self.version)


def row_identity(record: dict[str, Any]) -> tuple[str, str, str]:
    """The `StudyModel.identity` of the model that wrote a quality or latency row."""
    return (str(record["model"]), record.get("model_id") or "", record.get("plugin") or "")


def current_rows(records: Iterable[dict[str, Any]], versions: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The rows a report reads: per model, those of one plugin version only (never two mixed), the one in
    `versions` (model -> version, as the manifest records it) or else the version of the model's last row."""
    rows = list(records)
    chosen = dict(versions or {})
    for record in rows:
        if record["model"] not in (versions or {}):
            chosen[record["model"]] = record.get("plugin") or ""
    return [r for r in rows if (r.get("plugin") or "") == chosen.get(r["model"], "")]


def reported_versions(manifest: dict[str, Any] | None) -> dict[str, str]:
    """Model -> the plugin version its quality rows were scored by ("" for a built-in), as the manifest records
    it after each quality session: the one version of a model a report reads, its quality and its latency."""
    return {name: config.get("plugin") or "" for name, config in (manifest or {}).get("models", {}).items()}


def unreported(records: list[dict[str, Any]], versions: dict[str, str], what: str) -> list[str]:
    """One line per model whose last row is of another version than `versions` gives (its quality's): those
    rows exist but the report does not read them, so that a model's figures never mix two versions."""
    last = {r["model"]: r.get("plugin") or "" for r in records}
    lines = []
    for model, version in sorted(versions.items()):
        if model not in last or last[model] == version:
            continue
        others = Counter(r.get("plugin") or "" for r in records if r["model"] == model)
        others.pop(version, None)
        olds = ", ".join(
            f"{n} {what} by {v or 'a reranker with no plugin version recorded'}" for v, n in sorted(others.items())
        )
        lines.append(
            f"{model}: {olds} not reported: its quality was scored by {version or 'a built-in reranker'}, and a "
            "model's figures are of one version (score and time the same one to report both)"
        )
    return lines


def superseded(models: list[StudyModel], recorded: Iterable[tuple], done: str) -> list[str]:
    """One line per model with rows recorded under another version of it (the first three entries of each
    `recorded` key are a `row_identity`): those rows are not reused. Callers pass the models with work left."""
    counts = Counter(key[:3] for key in recorded)
    lines = []
    for model in models:
        others = {
            version: n
            for (name, model_id, version), n in counts.items()
            if (name, model_id) == model.identity[:2] and version != model.version
        }
        if others:
            olds = ", ".join(v or "a reranker with no plugin version recorded" for v in sorted(others))
            lines.append(
                f"{model.name} is {model.version or 'a built-in reranker'} now: its {sum(others.values())} row(s) "
                f"{done} by {olds} are not reused"
            )
    return lines


def parse_models(names: list[str]) -> list[StudyModel]:
    from ..base.registry import RERANKERS

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
        entry = RERANKERS.require(reranker)
        if entry.plugin is None:
            models.append(StudyModel(name, reranker, model))
            continue
        from ..methods.plugins import identity_of

        models.append(StudyModel(name, reranker, model, entry.plugin, identity_of(entry)))
    return models


def require_model_keys(models: list[StudyModel]) -> None:
    """Every API key the models need, checked at once before any work (one line naming all the missing ones)."""
    from ..base.registry import RERANKERS
    from ..providers.keys import require_keys

    require_keys([env for env in (RERANKERS.require(m.reranker).key_env for m in models) if env])


def build_reranker(model: StudyModel, cache_dir: Path, options: dict[str, Any], planning: bool = False):
    """A fresh reranker with a private Usage (returned alongside) for one worker thread (a plan's: no client)."""
    from ..base.registry import RERANKERS

    ctx = MethodContext(
        benchmark="rerank-study", cache_dir=cache_dir, options=dict(options), usage=Usage(), planning=planning
    )
    entry = RERANKERS.require(model.reranker)
    if entry.plugin is not None:  # a plugin's reranker: held to the Reranker protocol, and it takes no :model
        from ..methods.plugins import build_checked

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
    """The fields that name one reranker call in quality.jsonl and latency.jsonl: the model as given, its
    provider id (and for a plugin its identity tag), and the query. Both phases start every
    record with them."""
    record = {"model": model.name, "model_id": model.model or ""}
    if model.plugin is not None:
        record["plugin"] = model.version
    record.update(benchmark=candidate.benchmark, subset=candidate.subset, query_id=candidate.query_id)
    return record

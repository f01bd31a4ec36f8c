"""evals-repro: reproduce retrieval and reranking scores on pinned public benchmarks.

Python API (imported on first use, so `import evals_repro` stays cheap): `evals_repro.run(...)`
and `evals_repro.evaluate(qrels, run, measures)`; see `evals_repro.api`. The protocols a model of
your own implements (`Retriever`, `Embedder`, `Reranker`, as every built-in does) and the data they
receive (`Subset`, `Query`, `Page`, `EmbedItem`, `PageStyle`) are exported here too.
"""

from __future__ import annotations

from typing import Any

# Exported name -> the module that owns it (imported on first access).
_EXPORTS = {
    "run": "api",
    "evaluate": "api",
    "Retriever": "retrieval.base",
    "Embedder": "embedders.base",
    "Reranker": "rerankers.base",
    "EmbedItem": "embedders.base",
    "InputType": "embedders.base",
    "MethodContext": "base.context",
    "Subset": "base.data",
    "Query": "base.data",
    "Page": "base.data",
    "Run": "base.data",
    "PageStyle": "base.rendering",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        from importlib import import_module

        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'evals_repro' has no attribute {name!r}")

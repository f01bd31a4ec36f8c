"""evals-repro: reproduce retrieval and reranking scores on pinned public benchmarks.

Python API (imported on first use, so `import evals_repro` stays cheap): `evals_repro.run(...)`
and `evals_repro.evaluate(qrels, run, measures)`; see `evals_repro.api`. The protocols a model of
your own implements (`Retriever`, `Embedder`, `Reranker`, as every built-in does) and the data they
receive (`Subset`, `Query`, `Page`, `EmbedItem`, `PageStyle`) are exported here too, typed (the package
ships `py.typed`: type checkers read its hints).
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

if _TYPE_CHECKING:  # what type checkers and IDEs see; at run time each name is imported on first use
    from .api import evaluate, run
    from .base.context import MethodContext
    from .base.data import Page, Query, Run, Subset
    from .base.rendering import PageStyle
    from .embedders.base import Embedder, EmbedItem, InputType
    from .rerankers.base import Reranker
    from .retrieval.base import Retriever

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

# Spelled out (not sorted(_EXPORTS)) so that type checkers read it; tests/test_python_objects.py holds the two equal.
__all__ = [
    "EmbedItem",
    "Embedder",
    "InputType",
    "MethodContext",
    "Page",
    "PageStyle",
    "Query",
    "Reranker",
    "Retriever",
    "Run",
    "Subset",
    "evaluate",
    "run",
]


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        from importlib import import_module

        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'evals_repro' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API (what `help()`, tab completion and `dir()` show), not this module's own imports."""
    return list(__all__)

"""evals-repro: reproduce retrieval and reranking scores on pinned public benchmarks.

Python API (imported on first use, so `import evals_repro` stays cheap): `evals_repro.run(...)`
and `evals_repro.evaluate(qrels, run, measures)`; see `evals_repro.api`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["evaluate", "run"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'evals_repro' has no attribute {name!r}")

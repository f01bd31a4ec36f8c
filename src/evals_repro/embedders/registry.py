"""Embedder name -> "module:function(name, ctx) -> Embedder", imported only when used."""

from __future__ import annotations

import importlib

from ..errors import UsageError, choices
from ..retrieval.base import MethodContext
from .base import Embedder

EMBEDDERS: dict[str, str] = {
    "minilm": "evals_repro.embedders.minilm:build",
    "multilingual-e5-small": "evals_repro.embedders.e5:build",
    "voyage-4-large": "evals_repro.embedders.voyage:build",
    "voyage-4": "evals_repro.embedders.voyage:build",
    "voyage-4-lite": "evals_repro.embedders.voyage:build",
    "voyage-multimodal-3.5": "evals_repro.embedders.voyage:build",
    "cohere-embed-v4.0": "evals_repro.embedders.cohere:build",
    "gemini-embedding-2": "evals_repro.embedders.gemini:build",
    "gemini-embedding-2-noprompt": "evals_repro.embedders.gemini:build",
}


def build_embedder(name: str, ctx: MethodContext) -> Embedder:
    target = EMBEDDERS.get(name)
    if target is None:
        raise UsageError(f"unknown embedder '{name}'", f"choose from {choices(sorted(EMBEDDERS))}")
    module_name, func_name = target.split(":")
    return getattr(importlib.import_module(module_name), func_name)(name, ctx)

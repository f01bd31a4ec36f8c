"""Embedder name -> "module:function(name, ctx) -> Embedder", imported only when used."""

from __future__ import annotations

import importlib

from ..errors import UsageError, choices
from ..retrieval.base import MethodContext
from .base import Embedder

EMBEDDERS: dict[str, str] = {
    "minilm": "evals_repro.embedders.minilm:build",
    "multilingual-e5-small": "evals_repro.embedders.e5:build",
}


def build_embedder(name: str, ctx: MethodContext) -> Embedder:
    target = EMBEDDERS.get(name)
    if target is None:
        raise UsageError(f"unknown embedder '{name}'", f"choose from {choices(sorted(EMBEDDERS))}")
    module_name, func_name = target.split(":")
    return getattr(importlib.import_module(module_name), func_name)(name, ctx)

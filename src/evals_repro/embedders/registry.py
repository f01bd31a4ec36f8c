"""Build an embedder by name: names are registered beside each embedder's code (`@EMBEDDERS.register`)."""

from __future__ import annotations

from ..base.context import MethodContext
from ..base.registry import EMBEDDERS
from .base import Embedder


def build_embedder(name: str, ctx: MethodContext) -> Embedder:
    return EMBEDDERS.require(name).factory(name, ctx)

"""One registration mechanism for every pluggable component: methods, embedders, rerankers, loaders.

A component registers its names beside its code with a decorator::

    @EMBEDDERS.register("voyage-4-large", description="Voyage voyage-4-large embeddings", key_env="VOYAGE_API_KEY")
    def build(name, ctx): ...

so adding a model is a one-file change: a new module in the package, nothing else to edit. A registry
finds its components lazily, on the first lookup, by importing the modules of its packages whose
source mentions `<REGISTRY>.register` (a cheap text check keeps numba kernels and other heavy
modules out). Component modules keep SDK imports inside functions, so looking up a name never
loads an SDK, and `evals-repro --help` never imports a component at all.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UsageError, choices


@dataclass(frozen=True)
class Entry:
    """One registered name: its factory and what the user is told about it.

    `contents` are the `--content` kinds a first stage accepts; `key_env` names the environment
    variable holding its API key (checked before any work); `extra` holds kind-specific facts (a
    reranker's models, a store method's report group, study aliases).
    """

    kind: str
    name: str
    factory: Callable[..., Any] = field(compare=False, repr=False)
    description: str = ""
    contents: tuple[str, ...] = ("markdown",)
    key_env: str | None = None
    module: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


class Registry:
    """Names of one kind of component -> their entries, discovered from `packages` on first use."""

    def __init__(self, kind: str, attribute: str, packages: Iterable[str]):
        self.kind = kind
        self.attribute = attribute  # the module-level name modules register through, e.g. "EMBEDDERS"
        self.packages = tuple(packages)
        self._entries: dict[str, Entry] = {}
        self._discovered = False
        self._lock = threading.RLock()

    def register(
        self,
        *names: str,
        description: str = "",
        contents: Iterable[str] = ("markdown",),
        key_env: str | None = None,
        **extra: Any,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: register `factory` under every name; a name registered twice is a programming error."""

        def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
            with self._lock:
                for name in names:
                    existing = self._entries.get(name)
                    if existing is not None and existing.module != factory.__module__:
                        raise ValueError(
                            f"{self.kind} '{name}' is registered twice ({existing.module}, {factory.__module__})"
                        )
                    self._entries[name] = Entry(
                        self.kind, name, factory, description, tuple(contents), key_env, factory.__module__, dict(extra)
                    )
            return factory

        return decorate

    def unregister(self, name: str) -> None:
        """Drop a name (tests register temporary components and remove them afterwards)."""
        with self._lock:
            self._entries.pop(name, None)

    def _discover(self) -> None:
        with self._lock:
            if self._discovered:
                return
            self._discovered = True
            marker = f"{self.attribute}.register"
            for package_name in self.packages:
                package = importlib.import_module(package_name)
                for info in pkgutil.iter_modules(package.__path__):
                    if info.ispkg:
                        continue
                    path = Path(package.__path__[0]) / f"{info.name}.py"
                    try:
                        source = path.read_text(encoding="utf-8")
                    except OSError:
                        continue
                    if marker in source:
                        importlib.import_module(f"{package_name}.{info.name}")

    def get(self, name: str) -> Entry | None:
        self._discover()
        entry = self._entries.get(name)
        if entry is None and self.__dict__.get("_prefixes"):
            return self._family(name)
        return entry

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def register_prefix(
        self, prefix: str, shown: str, rest: str = r"[^+\s]+", **kwargs: Any
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: register a family of names, every `<prefix><rest>` (e.g. `openai:` for `openai:<model>`);
        `shown` is how the family is listed (`openai:<model>`). `rest` is a regular expression the part after
        the prefix must match in full (by default no `+` and no space, which a pipeline name reserves). An
        exact name wins."""
        import re

        register = self.register(shown, **kwargs)

        def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
            register(factory)
            with self._lock:  # prefix -> (shown name, what may follow); made on first use
                self.__dict__.setdefault("_prefixes", {})[prefix] = (shown, re.compile(rest))
            return factory

        return decorate

    def _family(self, name: str) -> Entry | None:
        """The entry of the registered family `name` belongs to, under `name` (`openai:text-embedding-3-large`)."""
        from dataclasses import replace

        for prefix, (shown, rest) in self.__dict__.get("_prefixes", {}).items():
            if name.startswith(prefix) and rest.fullmatch(name[len(prefix) :]) and shown in self._entries:
                return replace(self._entries[shown], name=name)
        return None

    def names(self) -> list[str]:
        self._discover()
        return sorted(self._entries)

    def entries(self) -> list[Entry]:
        return [self._entries[name] for name in self.names()]

    def require(self, name: str, hint: str = "") -> Entry:
        """The entry for `name`, or a UsageError listing the valid names."""
        entry = self.get(name)
        if entry is None:
            raise UsageError(f"unknown {self.kind} '{name}'", hint or f"choose from {choices(self.names())}")
        return entry


# First-stage retrieval methods (BM25, stores, the judged pool); every embedder is one too (dense retrieval).
METHODS = Registry("method", "METHODS", ("evals_repro.retrieval", "evals_repro.stores"))
EMBEDDERS = Registry("embedder", "EMBEDDERS", ("evals_repro.embedders",))
RERANKERS = Registry("reranker", "RERANKERS", ("evals_repro.rerankers",))
LOADERS = Registry("loader", "LOADERS", ("evals_repro.benchmarks",))

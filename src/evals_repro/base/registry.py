"""One registration mechanism for every pluggable component: methods, embedders, rerankers, loaders.

A component registers its names beside its code with a decorator::

    @EMBEDDERS.register("voyage-4-large", description="Voyage voyage-4-large embeddings", key_env="VOYAGE_API_KEY")
    def build(name, ctx): ...

so adding a model is a one-file change: a new module in the package, nothing else to edit. A registry
finds its components lazily: on the first lookup it reads the sources of its packages' modules for their
`@<REGISTRY>.register("name", ...)` lines (no import), and imports a module only when one of its names is
looked up (`get`, `require`) or every entry is listed (`entries`); `names()` and an unknown name's refusal
import none. So a refusal of `run voyage-4-large` imports the Voyage module, not sixty others, and
`run --help` lists the rerankers without importing one (a module whose registrations do not spell their
names as literals is imported to read them, as every module was before). Component modules keep SDK imports
inside functions, so looking up a name never loads an SDK. tests/test_registry_index.py holds the names read
from the sources equal to the names the modules register.

Installed packages add components through entry points (group `evals_repro.retrievers`,
`evals_repro.embedders`, `evals_repro.rerankers`): their names are read from the distributions'
metadata on first lookup, and a plugin's code is imported only when it is built or listed. An entry
carries its `PluginOrigin` (distribution, version, entry point; `identity.py` owns it and the identity
results record). Registries that share a namespace (methods and embedders: both are first stages)
refuse a plugin name that a built-in or another plugin already holds, naming both.
"""

from __future__ import annotations

import importlib
import logging
import os
import pkgutil
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .errors import ConfigurationError, UsageError, choices

if TYPE_CHECKING:  # identity.py (hashing, JSON) is imported where a plugin is found: listing names needs none of it
    from .identity import ComponentIdentity, PluginOrigin

log = logging.getLogger(__name__)


class PluginFactory:
    """The factory of a plugin entry: imports the entry point once, then builds the component from it
    (a class is instantiated with no arguments, a function called, anything else used as it is)."""

    def __init__(self, load: Callable[[], Any], origin: PluginOrigin, kind: str, name: str):
        self._load = load
        self.origin = origin
        self.kind = kind
        self.name = name
        self._target: Any = None
        self._lock = threading.Lock()
        self.identity: ComponentIdentity | None = None  # set once built (`methods.plugins.identity_of`)

    def target(self) -> Any:
        """The entry point's object; ConfigurationError (one line naming the plugin) when its import fails."""
        with self._lock:
            if self._target is None:
                try:
                    self._target = self._load()
                except Exception as exc:  # noqa: BLE001 - any error in a plugin's import is the plugin's
                    raise ConfigurationError(
                        f"plugin {self.kind} '{self.name}' ({self.origin.label()}) failed to import: "
                        f"{type(exc).__name__}: {exc}",
                        f"fix or uninstall {self.origin.distribution}",
                    ) from exc
            return self._target

    def __call__(self, *args: Any) -> Any:
        target = self.target()
        if isinstance(target, type) or (callable(target) and not _has_method(target, ("run", "embed", "rerank"))):
            try:
                return target()
            except Exception as exc:  # noqa: BLE001 - the plugin's own failure, named in one line
                raise ConfigurationError(
                    f"plugin {self.kind} '{self.name}' ({self.origin.label()}) failed to start: "
                    f"{type(exc).__name__}: {exc}",
                    f"{self.origin.target} must build with no arguments; fix it or uninstall {self.origin.distribution}",
                ) from exc
        return target


def _has_method(obj: Any, names: tuple[str, ...]) -> bool:
    return any(callable(getattr(obj, name, None)) for name in names)


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
    plugin: PluginOrigin | None = None  # set for entry points and Python objects, None for built-ins

    def owner(self) -> str:
        """Who provides it, for messages: the plugin's distribution, or the built-in module."""
        if self.plugin is None:
            return f"built-in, {self.module}"
        return self.plugin.label() if self.plugin.is_object else f"plugin {self.plugin.label()}"


class Registry:
    """Names of one kind of component -> their entries, discovered from `packages` on first use."""

    def __init__(self, kind: str, attribute: str, packages: Iterable[str], group: str | None = None):
        self.kind = kind
        self.attribute = attribute  # the module-level name modules register through, e.g. "EMBEDDERS"
        self.packages = tuple(packages)
        self.group = group  # the entry-point group plugins register through
        self._entries: dict[str, Entry] = {}
        self._refused: dict[str, str] = {}  # plugin name -> why it is refused (a clash)
        self._discovered = False
        self._builtins_found = False
        self._declared: dict[str, str] = {}  # built-in name -> the module whose source registers it
        self._prefix_modules: dict[str, str] = {}  # a family's prefix (`openai:`) -> its module
        self._no_options: set[str] = set()  # built-in names whose registration passes no `options=`
        self._lock = threading.RLock()
        self.namespace: tuple[Registry, ...] = (self,)  # registries whose names must not clash

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
            self._declared.pop(name, None)
            self._no_options.discard(name)

    def _discover(self) -> None:
        if self._discovered:
            return
        with _DISCOVERY:
            if self._discovered:
                return
            for registry in self.namespace:
                registry._discover_builtins()
            _discover_plugins(self.namespace)
            for registry in self.namespace:
                registry._discovered = True

    def _discover_builtins(self) -> None:
        """Read which module registers which names from the sources of the registry's packages (no import)."""
        with self._lock:
            if self._builtins_found:
                return
            self._builtins_found = True
            for package_name in self.packages:
                package = importlib.import_module(package_name)
                for info in pkgutil.iter_modules(package.__path__):
                    if info.ispkg:
                        continue
                    try:
                        source = (Path(package.__path__[0]) / f"{info.name}.py").read_text(encoding="utf-8")
                    except OSError:
                        continue
                    module = f"{package_name}.{info.name}"
                    read = registered_names(source, self.attribute)
                    if read is None:  # names the source does not spell out: the module registers them itself
                        importlib.import_module(module)
                        continue
                    for registration in read:
                        for name in registration.names:
                            self._declared.setdefault(name, module)
                            if not registration.has_options:
                                self._no_options.add(name)
                        if registration.prefix is not None:
                            self._prefix_modules.setdefault(registration.prefix, module)

    def _builtin(self, name: str) -> Entry | None:
        """The entry of a built-in name, its module imported on this first use."""
        entry = self._entries.get(name)
        module = self._declared.get(name)
        if entry is None and module is not None:
            importlib.import_module(module)
            entry = self._entries.get(name)
        return entry

    def get(self, name: str) -> Entry | None:
        self._discover()
        entry = self._builtin(name)
        if entry is None:
            for prefix, module in self._prefix_modules.items():
                if name.startswith(prefix):
                    importlib.import_module(module)
            if self.__dict__.get("_prefixes"):
                return self._family(name)
        return entry

    def options_of(self, name: str) -> tuple[str, ...] | None:
        """The run options a first stage takes beyond the common ones (its registration's `options=`), None when
        `name` is not registered here; a built-in registered without `options=` is answered without its import."""
        self._discover()
        if name in self._no_options and name not in self._entries:
            return ()
        entry = self.get(name)
        return None if entry is None else tuple(entry.extra.get("options", ()))

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
        """Every name, built-ins read from their sources: nothing is imported."""
        self._discover()
        return sorted(set(self._entries) | set(self._declared))

    def entries(self) -> list[Entry]:
        """Every entry (every built-in module imported)."""
        found = [self.get(name) for name in self.names()]
        return [entry for entry in found if entry is not None]

    def require(self, name: str, hint: str = "") -> Entry:
        """The entry for `name`, or a UsageError listing the valid names (or why a plugin is refused)."""
        entry = self.get(name)
        if entry is None:
            if name in self._refused:
                raise UsageError(self._refused[name], "rename or uninstall one of them")
            raise UsageError(f"unknown {self.kind} '{name}'", hint or f"choose from {choices(self.names())}")
        return entry

    def refused(self, name: str) -> str | None:
        """Why a plugin name is refused (it clashes with a built-in or another plugin), or None."""
        self._discover()
        return self._refused.get(name)

    def holder(self, name: str) -> Entry | None:
        """The entry holding `name` in this registry's namespace (methods and embedders share one)."""
        for registry in self.namespace:
            entry = registry.get(name)
            if entry is not None:
                return entry
        return None

    def add_plugin(self, entry: Entry) -> bool:
        """Add a plugin entry unless its name is taken in the namespace (then warn, naming both, and refuse it)."""
        self._discover()
        with self._lock:
            existing = self.holder(entry.name)
            if existing is not None and existing is not entry:
                message = _clash(entry, existing)
                log.warning(f"{message}; refused (rename its entry point)")
                self._refused.setdefault(entry.name, message)
                return False
            self._entries[entry.name] = entry
            return True

    @contextmanager
    def temporarily(self, entry: Entry) -> Iterator[Entry]:
        """Hold `entry` (a Python object given to `run`) for the duration of a block; a name already
        taken in the namespace is refused with a UsageError naming both."""
        self._discover()
        with self._lock:
            existing = self.holder(entry.name)
            if existing is not None:
                raise UsageError(
                    _clash(entry, existing),
                    "give your object another name= (see `evals-repro methods` for the names taken)",
                )
            self._entries[entry.name] = entry
        try:
            yield entry
        finally:
            with self._lock:
                if self._entries.get(entry.name) is entry:
                    del self._entries[entry.name]


_DISCOVERY = threading.RLock()


class Registration(NamedTuple):
    """One registration as read from a source: its names, a family's prefix, whether it passes `options=`."""

    names: tuple[str, ...]
    prefix: str | None = None
    has_options: bool = False


def registered_names(source: str, attribute: str) -> list[Registration] | None:
    """The registrations a module's source makes through `attribute` (e.g. "EMBEDDERS"), read without importing
    it: for each `@EMBEDDERS.register("a", "b", ...)` its names, for `@EMBEDDERS.register_prefix("openai:",
    "openai:<model>", ...)` the name it is listed under and its prefix, and whether the call passes `options=`.
    Names are the leading string literals; None when a registration's names are not literals
    (`register(SPEC.name)`): the module must be imported to know them."""

    found: list[Registration] = []
    literal = r'"[^"\\\n]*"'
    call = re.compile(rf"^[ \t]*@{re.escape(attribute)}\.register(_prefix)?\(\s*", re.MULTILINE)
    leading = re.compile(rf"((?:{literal}\s*(?:,\s*|(?=\))))*)")
    block_end = re.compile(r"^[ \t]*(?:@|def |async def |class )", re.MULTILINE)  # the next decorator or the def
    for match in call.finditer(source):
        literals = tuple(re.findall(r'"([^"\\\n]*)"', leading.match(source, match.end()).group(1)))  # type: ignore[union-attr]
        ends = block_end.search(source, match.end())
        options = re.search(r"\boptions\s*=", source[match.end() : ends.start() if ends else len(source)]) is not None
        if match.group(1):  # register_prefix(prefix, shown, ...)
            if len(literals) < 2:
                return None
            found.append(Registration((literals[1],), literals[0], options))
        elif literals:
            found.append(Registration(literals, None, options))
        else:
            return None
    return found


UNUSABLE_IN_NAMES = "+@:[]/ "  # the method grammar's own characters (pipeline.py), and spaces


def _clash(entry: Entry, existing: Entry) -> str:
    def who(e: Entry) -> str:
        return f"{e.kind} '{e.name}' ({e.owner()})"

    return f"{who(entry)} clashes with the {'' if existing.plugin else 'built-in '}{who(existing)}"


_SCANNED: dict[tuple[str, ...], Any] = {}  # sys.path -> every entry point installed there


def entry_points_of(group: str) -> list[Any]:
    """The entry points of `group`, in name order. Installed metadata is read once per process (one scan
    serves every group), again only when sys.path changes; where no installed package declares any of our
    groups (the usual case), importlib.metadata (~45 ms with its email parser) is not imported at all."""
    key = tuple(sys.path)
    if key not in _SCANNED:
        _SCANNED.clear()
        if _may_declare_plugins(key):
            from importlib import metadata

            _SCANNED[key] = metadata.entry_points()
        else:
            _SCANNED[key] = None
    scanned = _SCANNED[key]
    if scanned is None:
        return []
    return sorted(scanned.select(group=group), key=lambda ep: (ep.name, ep.value))


_OUR_GROUP_HEADER = re.compile(rb"^[ \t]*\[[ \t]*evals_repro\.", re.MULTILINE)


def _may_declare_plugins(path: tuple[str, ...]) -> bool:
    """Whether any package installed on `path` may declare an entry point in one of our groups: a look at each
    metadata folder's entry_points.txt for a `[evals_repro.` section. Anything it cannot look into (a zip on
    the path) counts as a yes, so the full reading decides."""
    for folder in path:
        try:
            names = os.listdir(folder or ".")
        except NotADirectoryError:
            return True
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                try:
                    with open(os.path.join(folder or ".", name, "entry_points.txt"), "rb") as handle:
                        if _OUR_GROUP_HEADER.search(handle.read()):
                            return True
                except OSError:
                    continue
    return False


def plugin_origin(entry_point: Any) -> PluginOrigin:
    from .identity import PluginOrigin

    dist = getattr(entry_point, "dist", None)
    return PluginOrigin(
        distribution=dist.metadata["Name"] if dist is not None else None,
        version=dist.version if dist is not None else None,
        group=entry_point.group,
        target=entry_point.value,
    )


def plugin_contents(kind: str) -> tuple[str, ...]:
    """An embedder from outside takes page images when it says so (`supports_images`, checked when it
    is built); other plugin first stages read markdown."""
    return ("markdown", "images") if kind == "embedder" else ("markdown",)


def _discover_plugins(namespace: tuple[Registry, ...]) -> None:
    """The plugin entries of a namespace's groups, read from installed metadata (nothing imported).
    A name held by a built-in is refused; a name two plugins claim is refused for both."""
    claims: dict[str, list[tuple[Registry, Entry]]] = {}
    for registry in namespace:
        if registry.group is None:
            continue
        for entry_point in entry_points_of(registry.group):
            origin = plugin_origin(entry_point)
            if not entry_point.name or any(c in entry_point.name for c in UNUSABLE_IN_NAMES):
                log.warning(
                    f"plugin {registry.kind} '{entry_point.name}' ({origin.label()}): a method name cannot hold "
                    f"any of {' '.join(repr(c) for c in UNUSABLE_IN_NAMES)}; refused (rename its entry point)"
                )
                continue
            factory = PluginFactory(entry_point.load, origin, registry.kind, entry_point.name)
            entry = Entry(
                registry.kind,
                entry_point.name,
                factory,
                contents=plugin_contents(registry.kind),
                module=entry_point.module,
                plugin=origin,
            )
            claims.setdefault(entry_point.name, []).append((registry, entry))
    for name, claimants in claims.items():
        builtin = next((found for r in namespace if (found := r._builtin(name)) is not None), None)
        if builtin is not None:
            for registry, entry in claimants:
                message = _clash(entry, builtin)
                log.warning(f"{message}; refused (rename its entry point)")
                registry._refused[name] = message
        elif len(claimants) > 1:
            (_, first), (_, second) = claimants[:2]
            message = _clash(second, first)
            log.warning(f"{message}; both refused (uninstall one, or rename an entry point)")
            for registry, _ in claimants:
                registry._refused[name] = message
        else:
            registry, entry = claimants[0]
            registry._entries[name] = entry


# First-stage retrieval methods (BM25, stores, the judged pool); every embedder is one too (dense retrieval).
METHODS = Registry("method", "METHODS", ("evals_repro.retrieval", "evals_repro.stores"), "evals_repro.retrievers")
EMBEDDERS = Registry("embedder", "EMBEDDERS", ("evals_repro.embedders",), "evals_repro.embedders")
RERANKERS = Registry("reranker", "RERANKERS", ("evals_repro.rerankers",), "evals_repro.rerankers")
# Benchmark plugins (group `evals_repro.benchmarks`: a declaration folder or a loader) are read by
# `benchmarks.registry`, which adds plugin loaders here with `add_plugin`.
LOADERS = Registry("loader", "LOADERS", ("evals_repro.benchmarks",))
METHODS.namespace = EMBEDDERS.namespace = (METHODS, EMBEDDERS)  # both are first stages: one namespace

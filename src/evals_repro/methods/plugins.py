"""Components from outside the package: entry-point plugins and Python objects given to `evals_repro.run`.

Both arrive as registry entries carrying a `PluginOrigin` (base/identity.py). Here they are held to the
protocols the built-ins implement (`Retriever`, `Embedder`, `Reranker`): an object missing a member is
refused in one line naming the object and the member, before any work; what it hands back, and what it
raises, is checked where it hands it back (base/contracts.py: one ComponentError line, exit 5). Once built,
each gets its `ComponentIdentity` (`identity_of`: distribution, version, target, `describe()`, and a digest of its
package's files when installed from a folder or file), once per process; results record it, `--resume`, the
embedding cache and the rerank-call journal key on it, and a change from the identity last built under the same
cache folder is said in one line.
"""

from __future__ import annotations

import inspect
import logging
import math
import threading
from typing import Any

from ..base import contracts
from ..base.errors import EvalsError, UsageError
from ..base.identity import (
    OBJECT_GROUP,
    ComponentIdentity,
    PluginOrigin,
    distribution_of_module,
    identify,
    note_identity,
)
from ..base.registry import (
    EMBEDDERS,
    METHODS,
    RERANKERS,
    UNUSABLE_IN_NAMES,
    Entry,
    PluginFactory,
    Registry,
    plugin_contents,
)
from ..base.usage import Usage
from ..embedders.base import Embedder
from ..embedders.guarded import PROVIDER as GUARDED_PROVIDER
from ..providers.batching import ASCII_CHARS_PER_TOKEN
from ..providers.plan import Plan
from ..rerankers.base import Reranker
from ..retrieval.base import Retriever

log = logging.getLogger(__name__)

PROTOCOLS: dict[str, type] = {"method": Retriever, "embedder": Embedder, "reranker": Reranker}
REGISTRIES: dict[str, Registry] = {"method": METHODS, "embedder": EMBEDDERS, "reranker": RERANKERS}
README_HINT = 'see "Bring your own model" in the README'


def missing_member(obj: Any, protocol: type) -> tuple[str, str] | None:
    """The first member of `protocol` that `obj` lacks, as ("method" | "attribute", name); None if complete."""
    members = sorted(getattr(protocol, "__protocol_attrs__", ()))
    for name in [m for m in members if callable(getattr(protocol, m, None))] + members:
        wanted_method = callable(getattr(protocol, name, None))
        if not hasattr(obj, name):
            return ("method" if wanted_method else "attribute", name)
        if wanted_method and not callable(getattr(obj, name)):
            return ("method", name)
    return None


def _object_name(obj: Any) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _signature(protocol: type, member: str) -> str:
    attribute = getattr(protocol, member, None)
    if callable(attribute):
        written = f"{member}{inspect.signature(attribute)}".replace("'", "")
        return written.replace("(self, ", "(").replace("(self)", "()")
    hint = protocol.__annotations__.get(member, "")
    return f"{member}: {hint}" if hint else member


def component_label(entry: Entry) -> str:
    """How a message names a component: kind, name and where it comes from (distribution and target)."""
    where = entry.plugin.label() if entry.plugin else entry.module
    return f"{entry.kind} '{entry.name}' ({where})"


def check_protocol(obj: Any, entry: Entry) -> Any:
    """`obj` itself when it implements the protocol of the entry's kind; else a UsageError (exit 2) in one
    line naming the object, the missing method or attribute and the signature to add."""
    protocol = PROTOCOLS[entry.kind]
    gap = missing_member(obj, protocol)
    if gap is None:
        return obj
    what, member = gap
    raise UsageError(
        f"{component_label(entry)}: object {_object_name(obj)} lacks {what} '{member}' "
        f"of the {protocol.__name__} protocol",
        f"add {_signature(protocol, member)} ({README_HINT})",
    )


def build_checked(entry: Entry, *args: Any) -> Any:
    """Build a registry entry; a plugin's or Python object's component is checked against its protocol, gets
    its identity (a change from the last one built under the run's cache folder said in one line), and a
    reranker's or retriever's calls are billed (its last argument is the run's MethodContext)."""
    built = entry.factory(*args)
    if entry.plugin is None:
        return built
    checked = check_protocol(built, entry)
    ctx = args[-1]
    identity = identity_of(entry, checked)
    changed = note_identity(ctx.cache_dir, identity, keep=not ctx.planning)
    if changed:
        log.info(changed)
    wrapped: BilledReranker | BilledRetriever
    if entry.kind == "reranker":
        wrapped = BilledReranker(checked, entry.name, ctx.usage, component_label(entry))
    elif entry.kind == "method":
        wrapped = BilledRetriever(checked, entry.name, ctx.usage, component_label(entry))
    else:
        return checked  # an embedder: pipeline.py puts it behind GuardedEmbedder, which bills and checks its calls
    wrapped.component_identity = identity
    return wrapped


class BilledRetriever:
    """A plugin's or Python object's whole first stage as the run calls it: its Run is checked (contracts.py)
    and each subset's queries bill their estimated tokens as provider `plugin` and the retriever's name (what it
    spends indexing and searching is its own business), so its cost is "price unknown" until a `--prices` file
    prices it."""

    component_identity: ComponentIdentity | None = None

    def __init__(self, inner: Any, name: str, usage: Usage, label: str = ""):
        self.inner = inner
        self.name = inner.name
        self.billed_as = name  # the name it is run under (a Python object's `name=`)
        self.usage = usage
        self.label = label or f"method '{name}'"  # how a broken contract names it

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.inner, attribute)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def run(self, subset: Any, queries: list[Any], top_k: int) -> Any:
        with contracts.user_call(self.label, "run()"):
            found = self.inner.run(subset, queries, top_k)
        if queries:
            tokens = sum(_tokens(query.text) for query in queries)
            self.usage.bill(GUARDED_PROVIDER, self.billed_as, {"input_tokens": tokens})
        return contracts.checked_run(found, self.label, subset, queries, top_k)

    def plan(self, subset: Any, queries: list[Any], top_k: int, plan: Plan) -> None:
        if queries:
            tokens = sum(_tokens(query.text) for query in queries)
            units = {"input_tokens": float(tokens)}
            plan.add(GUARDED_PROVIDER, self.billed_as, "queries", items=len(queries), tokens=tokens, units=units)


class BilledReranker:
    """A plugin's or Python object's reranker as the run calls it: its scores are checked (contracts.py), and
    each call bills its estimated input tokens (the query once per document, plus the documents) as provider
    `plugin` and its `model`, so its cost is "price unknown" until a `--prices` file prices it, never $0;
    `plan` counts the same."""

    component_identity: ComponentIdentity | None = None  # what its rerank-call journal keys on

    def __init__(self, inner: Any, name: str, usage: Usage, label: str = ""):
        self.inner = inner
        self.name = inner.name
        self.billed_as = name  # the name it is run under (usage counts `<name>_requests`)
        self.model = inner.model
        self.usage = usage
        self.label = label or f"reranker '{name}'"  # how a broken contract names it

    def __getattr__(self, attribute: str) -> Any:  # workers, preflight, ... as the object has them
        return getattr(self.inner, attribute)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        with contracts.user_call(self.label, "rerank()"):
            scores = self.inner.rerank(query, documents)
        if documents:
            tokens = _pair_tokens(_tokens(query), [_tokens(d) for d in documents])
            self.usage.add(f"{self.billed_as}_requests")
            self.usage.bill(GUARDED_PROVIDER, self.model, {"input_tokens": tokens})
        return contracts.checked_scores(scores, len(documents), self.label, query)

    def plan(
        self, query_tokens: int, doc_tokens: list[int], plan: Plan, what: str = "rerank", prior: float | None = None
    ) -> None:
        """Planned as `rerank` bills it: at the throttle's estimate (so `prior`, a first guess, is not used)."""
        if doc_tokens:
            tokens = _pair_tokens(query_tokens, doc_tokens)
            units = {"input_tokens": float(tokens)}
            plan.add(GUARDED_PROVIDER, self.model, what, requests=1, items=len(doc_tokens), tokens=tokens, units=units)


def _tokens(text: str) -> int:
    """`estimate_tokens` without its per-character loop (billing stays off the hot path, e.g. the latency
    study's timed calls): non-ASCII characters counted by the codec."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return max(1, math.ceil(ascii_chars / ASCII_CHARS_PER_TOKEN) + len(text) - ascii_chars)


def _pair_tokens(query_tokens: int, doc_tokens: list[int]) -> int:
    return query_tokens * len(doc_tokens) + sum(doc_tokens)


# -- Python objects ------------------------------------------------------------------------------------


class ObjectFactory(PluginFactory):
    """A Python object given to `run`: built already, so the factory hands it back."""

    def __init__(self, obj: Any, origin: PluginOrigin, kind: str, name: str):
        super().__init__(lambda: obj, origin, kind, name)
        self.obj = obj

    def __call__(self, *args: Any) -> Any:
        return self.obj


def object_entry(kind: str, name: str, obj: Any) -> Entry:
    """A registry entry for a Python object implementing the protocol of `kind`; refused (UsageError,
    naming the object and the missing member) when it lacks one, or when `name` cannot be a method name."""
    if isinstance(obj, type):
        raise UsageError(
            f"{kind} object {_object_name(obj)} is a class, not an instance", f"pass {obj.__name__}(...) instead"
        )
    module = type(obj).__module__
    distribution, version = distribution_of_module(module)
    origin = PluginOrigin(distribution, version, OBJECT_GROUP, f"{module}:{type(obj).__qualname__}")
    entry = Entry(
        kind,
        name,
        ObjectFactory(obj, origin, kind, name),
        description=_first_line(type(obj).__doc__),
        contents=plugin_contents(kind),
        module=module,
        plugin=origin,
    )
    check_protocol(obj, entry)
    if not name or not isinstance(name, str) or any(c in name for c in UNUSABLE_IN_NAMES):
        raise UsageError(
            f"name={name!r} for the {kind} object {_object_name(obj)} is not a valid method name",
            "give a short name without spaces or any of + @ : [ ] / (results are filed under it)",
        )
    return entry


# -- what results record -------------------------------------------------------------------------------


_IDENTITIES = threading.Lock()


def identity_of(entry: Entry, built: Any = None) -> ComponentIdentity:
    """The identity of a plugin's or Python object's component, made once per entry (a plugin's once per process,
    so its files are read once a run; a Python object's once per `run` call) from `built`, or from a component
    built here when none is given (the study asks before it builds one per worker). A describe() that raises is
    one line naming the component."""
    factory = entry.factory
    assert entry.plugin is not None and isinstance(factory, PluginFactory)
    with _IDENTITIES:
        if factory.identity is not None:
            return factory.identity
    if built is None:
        built = check_protocol(factory(), entry)
    try:
        described = built.describe()
    except Exception as exc:  # noqa: BLE001 - the component's own failure, named
        what = "object" if entry.plugin.is_object else "plugin"
        raise UsageError(
            f"{entry.kind} {what} '{entry.name}' ({entry.plugin.target}): describe() raised {type(exc).__name__}: {exc}",
            "describe() must return a dict of the settings that change its results",
        ) from exc
    identity = identify(entry.kind, entry.name, entry.plugin, described)
    with _IDENTITIES:
        if factory.identity is None:
            factory.identity = identity
        return factory.identity


def recorded(entry: Entry) -> dict[str, Any]:
    """What a result records of a plugin component (and compares on `--resume`): its identity."""
    return identity_of(entry).as_dict()


# -- listing ---------------------------------------------------------------------------------------------


def _first_line(text: str | None) -> str:
    return (text or "").strip().partition("\n")[0].strip()


def declared_images(obj: Any) -> bool | None:
    """Whether an embedder takes page images, read from its `supports_images` (the attribute the dense
    retriever's `--content images` refusal reads off the built embedder); None when `obj` does not hold it
    as a plain bool (a factory function, or a class that sets it in its constructor): only the built
    embedder can tell then."""
    value = getattr(obj, "supports_images", None)
    return value if isinstance(value, bool) else None


def accepted_contents(entry: Entry) -> tuple[str, ...] | None:
    """The `--content` kinds a first stage accepts. A plugin's or Python object's embedder takes images
    only when its `supports_images` says so (its module is imported to read it); None when that is known
    only once it is built, or when it fails to import."""
    if entry.plugin is None or entry.kind != "embedder":
        return entry.contents
    factory = entry.factory
    try:
        target = factory.target() if isinstance(factory, PluginFactory) else factory
    except EvalsError:
        return None
    images = declared_images(target)
    if images is None:
        return None
    return tuple(c for c in entry.contents if c != "images" or images)


def describe_plugin(entry: Entry) -> tuple[str, bool]:
    """(what `methods` shows for a plugin entry, whether it imports): its `description` or docstring's
    first line and its distribution; an entry that fails to import is named in one warning line."""
    assert entry.plugin is not None
    source = f"[{entry.plugin.distribution} {entry.plugin.version}]"
    factory = entry.factory
    try:
        target = factory.target() if isinstance(factory, PluginFactory) else factory
    except EvalsError as exc:
        log.warning(exc.message + "; skipped")
        return f"{source} (failed to import; see the warning above)", False
    text = getattr(target, "description", None)
    described = text if isinstance(text, str) and text else _first_line(getattr(target, "__doc__", None))
    return f"{source} {described}".rstrip(), True

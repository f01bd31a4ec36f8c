"""What a component from outside the package is: where it comes from, and the one identity every reuse reads.

A plugin (an entry point of an installed distribution) or a Python object given to `evals_repro.run` is
identified by one value, `ComponentIdentity`: its distribution and version, its target (entry point or class),
what its `describe()` returns, and, when the distribution is installed from a folder or file rather than an index
(PEP 610's `direct_url.json`: editable, or a `file://` url), a digest of the files of the component's own package,
so that an edit without a version bump is a new identity (a VCS install is identified by its commit instead).

The embedding cache key, the rerank-call journal, `--resume`, the reranking study's rows, the result record and
the reports all read this one value, so nothing computed under one identity is reused under another, and a change
is said in one line naming what changed (`what_changed`). Built-in components are identified by their
`describe()` (their code is evals-repro's, whose version every record holds).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .io import atomic_write_json, jsonable

log = logging.getLogger(__name__)

OBJECT_GROUP: Final = "python object"
# Files past this size (model weights inside a package) are identified by size and modification time, not read.
LARGE_FILE: Final = 64 << 20
LEDGER: Final = "components"  # <cache dir>/components/: the identity each component was last built with


@dataclass(frozen=True)
class PluginOrigin:
    """Where a component from outside the package comes from: an entry point of an installed
    distribution, or a Python object handed to `evals_repro.run` (group "python object")."""

    distribution: str | None
    version: str | None
    group: str
    target: str  # the entry point's `module:attr`, or the object's `module:qualname`

    @property
    def is_object(self) -> bool:
        return self.group == OBJECT_GROUP

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]

    def label(self) -> str:
        owner = f"{self.distribution} {self.version}" if self.distribution else "no distribution"
        if self.is_object:
            return f"Python object {self.target}" + (f", from {owner}" if self.distribution else "")
        return f"{owner}, {self.target}"

    def as_dict(self) -> dict[str, Any]:
        return {"distribution": self.distribution, "version": self.version, "group": self.group, "target": self.target}


# -- how a distribution was installed ------------------------------------------------------------------------


@dataclass(frozen=True)
class Installed:
    """How a distribution was installed, read from its PEP 610 `direct_url.json`.

    `kind`: None from an index (no direct_url.json: its version identifies it), "editable", "local" (a folder
    or file on this machine), "url" (an archive from elsewhere) or "vcs" (a commit, in `commit`)."""

    kind: str | None
    commit: str | None = None

    @property
    def hashed(self) -> bool:
        """Whether the component's files are hashed: anything but an index or a pinned commit."""
        return self.kind in ("editable", "local", "url")


def _read_direct_url(text: str | None) -> Installed:
    if text is None:
        return Installed(None)
    try:
        info = json.loads(text)
    except ValueError:
        info = None
    if not isinstance(info, dict):
        return Installed("local")  # unreadable: its files are hashed, which can only recompute more
    dir_info, vcs = info.get("dir_info"), info.get("vcs_info")
    if isinstance(dir_info, dict) and dir_info.get("editable"):
        return Installed("editable")
    if isinstance(vcs, dict) and vcs.get("commit_id"):
        return Installed("vcs", f"{vcs.get('vcs') or 'vcs'} {vcs['commit_id']}")
    return Installed("local" if str(info.get("url") or "").startswith("file:") else "url")


@functools.cache
def installed(distribution: str) -> Installed:
    """How `distribution` was installed (read once per process)."""
    from importlib import metadata

    try:
        found = metadata.distribution(distribution)
    except (metadata.PackageNotFoundError, ValueError):
        return Installed(None)
    return _read_direct_url(found.read_text("direct_url.json"))


@functools.cache
def distribution_of_module(module: str) -> tuple[str | None, str | None]:
    """The installed distribution providing a module, and its version: from the installed files, else (an
    editable install lists no package files) the editable distribution whose `.pth` puts the module's folder
    on sys.path; (None, None) for a script, a notebook or a module on sys.path by hand."""
    from importlib import metadata

    top = module.partition(".")[0]
    found = sys.modules.get(top)
    file = getattr(found, "__file__", None)
    if top == "__main__" or not file:
        return None, None
    for name in metadata.packages_distributions().get(top) or []:
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    on_path = Path(file).resolve().parent  # the sys.path entry it was found in
    if hasattr(found, "__path__"):
        on_path = on_path.parent
    for dist in metadata.distributions():
        if _read_direct_url(dist.read_text("direct_url.json")).kind != "editable":
            continue
        for listed in dist.files or []:
            if listed.suffix == ".pth" and on_path in _pth_folders(Path(str(listed.locate()))):
                return dist.metadata["Name"], dist.version
    return None, None


def _pth_folders(path: Path) -> set[Path]:
    """The folders a `.pth` file adds to sys.path (its lines that are not imports or comments)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return set()
    return {Path(line.strip()).resolve() for line in lines if line.strip() and not line.startswith(("#", "import"))}


# -- the component's own files -------------------------------------------------------------------------------


def package_root(module: str) -> Path | None:
    """What is hashed for a component in `module`: the folder of its outermost regular package (a namespace
    package's parts belong to other distributions too), or the module's own file when it is not in one."""
    parts = module.split(".")
    for end in range(1, len(parts) + 1):
        found = sys.modules.get(".".join(parts[:end]))
        file = getattr(found, "__file__", None)
        if file:
            path = Path(file)
            return path.parent if hasattr(found, "__path__") else path
    return None


def _files(root: Path) -> list[Path]:
    """Every file a package ships, in a stable order; bytecode, hidden files and editor backups left out."""
    if root.is_file():
        return [root]
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(names):
            if not name.startswith(".") and not name.endswith(("~", ".pyc", ".pyo")):
                found.append(Path(folder) / name)
    return found


_DIGESTS: dict[tuple[Path, tuple[tuple[str, int, int], ...]], str] = {}
_DIGESTS_LOCK = threading.Lock()


def sources_digest(root: Path) -> str:
    """blake2b-128 of a package's files (relative path, size, content; a file past LARGE_FILE: its size and
    modification time). Their contents are read once per process while their sizes and modification times
    stay the same (a Python object's package edited between two `evals_repro.run` calls is hashed again)."""
    files = _files(root)
    base = root.parent if root.is_file() else root
    listed = []
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue  # vanished since it was listed
        listed.append((path.relative_to(base).as_posix(), stat.st_size, stat.st_mtime_ns))
    seen = (root, tuple(listed))
    with _DIGESTS_LOCK:
        if seen in _DIGESTS:
            return _DIGESTS[seen]
    digest = hashlib.blake2b(digest_size=16)
    for relative, size, mtime in listed:
        digest.update(f"{relative}\0{size}\0".encode())
        if size > LARGE_FILE:
            digest.update(f"mtime {mtime}\0".encode())
            continue
        try:
            with open(base / relative, "rb") as handle:
                while block := handle.read(1 << 20):
                    digest.update(block)
        except OSError as exc:  # a file that cannot be read: said in the digest, never skipped silently
            digest.update(f"unreadable {exc.errno}\0".encode())
    with _DIGESTS_LOCK:
        _DIGESTS[seen] = digest.hexdigest()
    return _DIGESTS[seen]


# -- the identity ---------------------------------------------------------------------------------------------


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def identity_key(recorded: Mapping[str, Any]) -> str:
    """The digest of an identity as records hold it (`ComponentIdentity.as_dict`): what caches and journals key on."""
    return hashlib.blake2b(_canonical(dict(recorded)).encode(), digest_size=16).hexdigest()


def identity_label(recorded: Mapping[str, Any]) -> str:
    """ "acme-search 1.4.0" (a Python object without a distribution: its class), for messages and tables."""
    if recorded.get("distribution"):
        return f"{recorded['distribution']} {recorded.get('version')}"
    return f"Python object {recorded.get('target')}" if recorded.get("group") == OBJECT_GROUP else "no distribution"


def identity_tag(recorded: Mapping[str, Any]) -> str:
    """The label and a short key, one string per identity ("acme-search 1.4.0 #3f2a9c1e5b7d"): what the reranking
    study's rows record, and how reports tell two identities with one label apart."""
    return f"{identity_label(recorded)} #{identity_key(recorded)[:12]}"


@dataclass(frozen=True, eq=False)
class ComponentIdentity:
    """A plugin's or Python object's identity (see the module docstring); `name` is what it runs under."""

    kind: str  # method, embedder or reranker
    name: str
    origin: PluginOrigin
    describe: Any  # what its describe() returned, as plain JSON data
    install: str | None = None  # `Installed.kind`: None from an index or for an object of no distribution
    sources: str | None = None  # the package files' digest, or a VCS install's commit

    def as_dict(self) -> dict[str, Any]:
        """What a result records (and `--resume` compares): fields that are None are left out, so a record
        written before they existed still matches when they do not apply."""
        recorded = {**self.origin.as_dict(), "describe": self.describe}
        if self.install is not None:
            recorded["install"] = self.install
        if self.sources is not None:
            recorded["sources"] = self.sources
        return recorded

    @functools.cached_property
    def key(self) -> str:
        return identity_key(self.as_dict())

    def label(self) -> str:
        return identity_label(self.as_dict())

    def tag(self) -> str:
        return identity_tag(self.as_dict())


def identify(kind: str, name: str, origin: PluginOrigin, described: Any) -> ComponentIdentity:
    """The identity of a built component: `described` is what its describe() returned. Its package's files are
    digested (`sources_digest`) when its distribution is installed from a folder or a file."""
    distribution = origin.distribution
    how = installed(distribution) if distribution else Installed(None)
    sources = how.commit
    if how.hashed:
        root = package_root(origin.module)
        sources = sources_digest(root) if root is not None else None
    return ComponentIdentity(kind, name, origin, jsonable(described), how.kind, sources)


def reuse_key(component: Any) -> Any:
    """What must match for anything a component computed (cached vectors, journaled answers) to be reused:
    its identity when it comes from outside the package, else its describe()."""
    identity = getattr(component, "component_identity", None)
    if isinstance(identity, ComponentIdentity):
        return identity.as_dict()
    return component.describe()


# -- saying what changed -------------------------------------------------------------------------------------

_SHOWN = 60  # characters of one describe() value in a change line
_KEYS_SHOWN = 3  # describe() keys named in a change line


def _shown(value: Any) -> str:
    text = _canonical(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _describe_change(old: Any, new: Any) -> str:
    if not (isinstance(old, Mapping) and isinstance(new, Mapping)):
        return f"describe() changed: {_shown(old)} -> {_shown(new)}"
    parts = []
    for key in sorted(set(old) | set(new), key=str):
        if key not in new:
            parts.append(f"{key} {_shown(old[key])} removed")
        elif key not in old:
            parts.append(f"{key} {_shown(new[key])} added")
        elif _canonical(old[key]) != _canonical(new[key]):
            parts.append(f"{key} {_shown(old[key])} -> {_shown(new[key])}")
    shown = ", ".join(parts[:_KEYS_SHOWN]) + (
        f" (and {len(parts) - _KEYS_SHOWN} more)" if len(parts) > _KEYS_SHOWN else ""
    )
    return "describe() changed: " + shown


def installed_text(kind: Any) -> str:
    """How a recorded install kind reads: "from an index", "editable", "from a local path", ..."""
    return {None: "from an index", "local": "from a local path", "url": "from a url", "vcs": "from VCS"}.get(
        kind, str(kind)
    )


def what_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """What differs between two recorded identities of one component, in a few words: the version, the target,
    describe(), how it was installed, its sources (said when its version did not change)."""
    parts = []
    version_changed = (old.get("distribution"), old.get("version")) != (new.get("distribution"), new.get("version"))
    if version_changed:
        if old.get("distribution") == new.get("distribution") and new.get("distribution"):
            parts.append(f"{new['distribution']} {old.get('version')} -> {new.get('version')}")
        else:
            parts.append(f"{identity_label(old)} -> {identity_label(new)}")
    if old.get("target") != new.get("target"):
        parts.append(f"{old.get('target')} -> {new.get('target')}")
    if "describe" not in old:
        parts.append("recorded before evals-repro kept a plugin's describe() and sources")
        return "; ".join(parts)
    if _canonical(old.get("describe")) != _canonical(new.get("describe")):
        parts.append(_describe_change(old.get("describe"), new.get("describe")))
    if old.get("install") != new.get("install"):
        parts.append(f"installed {installed_text(old.get('install'))} -> {installed_text(new.get('install'))}")
    elif old.get("sources") != new.get("sources") and not version_changed:
        what = "commit" if new.get("install") == "vcs" else "sources"
        parts.append(f"{what} of {new.get('distribution')} ({installed_text(new.get('install'))}) changed")
    return "; ".join(parts) or "its identity changed"


_LEDGER_LOCK = threading.Lock()


def note_identity(cache_dir: Path, identity: ComponentIdentity, keep: bool = True) -> str | None:
    """One line saying how `identity` differs from the identity its name was last built with under `cache_dir`
    (None when it is the same, or the first), said once per run; `keep` records it as the last one (a plan
    does not). Nothing computed under another identity is reused: this line says why it is computed again."""
    from urllib.parse import quote

    path = Path(cache_dir) / LEDGER / f"{identity.kind}-{quote(identity.name, safe='-_.~')}.json"
    current = identity.as_dict()
    with _LEDGER_LOCK:
        try:
            previous = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            previous = None  # none yet, or damaged: this build's identity replaces it
        if isinstance(previous, dict) and identity_key(previous) == identity.key:
            return None
        if keep:
            try:
                atomic_write_json(path, current)
            except OSError as exc:  # the caches beside it will say so; this record only names a change
                log.debug("could not record %s's identity in %s: %s", identity.name, path, exc)
    if not isinstance(previous, dict):
        return None
    return f"{identity.name}: {what_changed(previous, current)}; nothing computed by its previous identity is reused"

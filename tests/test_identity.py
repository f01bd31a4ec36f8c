"""base/identity.py in-process: how an install is read (PEP 610 direct_url.json), what a package's digest covers,
the one line naming a change, and the keys the embedding cache and the rerank-call journal take from an identity.

Distributions here are fake `.dist-info` folders on a temporary sys.path entry, what an installer writes; the
end-to-end behaviour with real installed packages is tests/test_plugin_identity.py's.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from pathlib import Path

import pytest

import evals_repro
from evals_repro.base import identity as I
from evals_repro.base.data import Page, Query, Subset
from evals_repro.base.errors import UsageError
from evals_repro.base.identity import ComponentIdentity, PluginOrigin
from evals_repro.base.usage import Usage
from evals_repro.embedders.cache_keys import settings_digest
from evals_repro.embedders.chunk_file import FORMAT
from evals_repro.embedders.guarded import GuardedEmbedder
from evals_repro.rerankers.pipeline import RerankedRetriever


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path to install fake distributions into; the per-process memos cleared around the test."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    for memo in (I.installed, I.distribution_of_module):
        memo.cache_clear()
    yield folder
    for memo in (I.installed, I.distribution_of_module):
        memo.cache_clear()


def dist_info(site: Path, name: str, direct_url: dict | str | None, files: dict[str, str] | None = None) -> Path:
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if direct_url is not None:
        text = direct_url if isinstance(direct_url, str) else json.dumps(direct_url)
        (info / "direct_url.json").write_text(text)
    record = [f"{info.name}/METADATA,,"]
    for path, text in (files or {}).items():
        (site / path).write_text(text)
        record.append(f"{path},,")
    (info / "RECORD").write_text("\n".join(record) + "\n")
    return info


@pytest.mark.parametrize(
    ("direct_url", "kind", "commit"),
    [
        (None, None, None),  # from an index: its version identifies it
        ({"url": "file:///home/me/acme", "dir_info": {"editable": True}}, "editable", None),
        ({"url": "file:///home/me/acme", "dir_info": {}}, "local", None),
        ({"url": "file:///tmp/acme-1.0-py3-none-any.whl", "archive_info": {}}, "local", None),
        ({"url": "https://example.org/acme-1.0.tar.gz", "archive_info": {"hash": "sha256=00"}}, "url", None),
        (
            {"url": "https://github.com/acme/acme", "vcs_info": {"vcs": "git", "commit_id": "1f2e3d"}},
            "vcs",
            "git 1f2e3d",
        ),
        ("{not json", "local", None),  # unreadable: hashed, which can only recompute more
    ],
)
def test_how_a_distribution_was_installed_is_read_from_pep_610(site, direct_url, kind, commit):
    dist_info(site, "acme-search", direct_url)
    assert (I.installed("acme-search").kind, I.installed("acme-search").commit) == (kind, commit)
    assert I.installed("acme-search").hashed == (kind in ("editable", "local", "url"))


def test_a_package_digest_covers_its_files_and_nothing_else(tmp_path, monkeypatch):
    package = tmp_path / "acme"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "model.py").write_text("SCALE = 1\n")
    (package / "vocab.txt").write_text("a b c\n")

    def digest() -> str:
        I._DIGESTS.clear()  # a new process (an edit within the clock's granularity keeps size and mtime)
        return I.sources_digest(package)

    first = digest()
    # Bytecode, caches, hidden files and editor backups are not the package's code.
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "model.cpython-312.pyc").write_bytes(b"\0")
    (package / ".model.py.swp").write_text("x")
    (package / "model.py~").write_text("x")
    assert digest() == first
    (package / "sub" / "model.py").write_text("SCALE = 2\n")  # an edit
    edited = digest()
    assert edited != first
    (package / "data.json").write_text("{}")  # a new file
    assert digest() not in (first, edited)
    (package / "data.json").unlink()
    assert digest() == edited
    # Read once per process: a later call does not read the files again, until one's size or mtime changes.
    opened: list[Path] = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda p, *a, **k: opened.append(Path(p)) or real_open(p, *a, **k))
    current = I.sources_digest(package)
    assert I.sources_digest(package) == current and opened == []
    (package / "vocab.txt").write_text("a b c d\n")
    assert I.sources_digest(package) != current and package / "vocab.txt" in opened
    # A file past LARGE_FILE (model weights) is its size and modification time, never read.
    monkeypatch.setattr(I, "LARGE_FILE", 16)
    weights = package / "weights.bin"
    weights.write_bytes(b"0123456789" * 2)
    before = digest()
    assert weights not in opened
    os.utime(weights, ns=(1, 1))
    assert digest() != before


def test_an_object_from_an_editable_distribution_is_identified_by_its_files(site, tmp_path, monkeypatch):
    """An editable install lists no package files: the distribution is found by its .pth's folder, and its
    package's files are digested, so an edit is a new identity."""
    project = tmp_path / "project"
    (project / "labmodels").mkdir(parents=True)
    (project / "labmodels" / "__init__.py").write_text(
        "class Oracle:\n    name = 'lab'\n\n    def run(self, subset, queries, top_k):\n        return {}\n\n"
        "    def describe(self):\n        return {'k': 1}\n"
    )
    url = {"url": project.as_uri(), "dir_info": {"editable": True}}
    dist_info(site, "lab-models", url, {"_lab_models.pth": f"{project}\n"})
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.delitem(sys.modules, "labmodels", raising=False)
    labmodels = importlib.import_module("labmodels")
    from evals_repro.methods.plugins import identity_of, object_entry

    first = identity_of(object_entry("method", "lab", labmodels.Oracle()))
    assert first.as_dict() == {
        "distribution": "lab-models",
        "version": "1.0",
        "group": "python object",
        "target": "labmodels:Oracle",
        "describe": {"k": 1},
        "install": "editable",
        "sources": first.sources,
    }
    (project / "labmodels" / "helpers.py").write_text("WEIGHT = 0.5\n")  # between two runs of one process
    second = identity_of(object_entry("method", "lab", labmodels.Oracle()))
    assert second.sources != first.sources
    assert I.what_changed(first.as_dict(), second.as_dict()) == "sources of lab-models (editable) changed"


def test_a_script_object_is_its_class_and_describe(site):
    class Here:
        name = "here"

        def run(self, subset, queries, top_k):
            return {}

        def describe(self):
            return {"k": 2}

    from evals_repro.methods.plugins import identity_of, object_entry

    found = identity_of(object_entry("method", "here", Here())).as_dict()
    assert found == {
        "distribution": None,
        "version": None,
        "group": "python object",
        "target": f"{__name__}:{Here.__qualname__}",
        "describe": {"k": 2},
    }


def test_a_describe_that_raises_is_one_line_naming_the_component():
    class Broken:
        name = "broken"

        def run(self, subset, queries, top_k):
            return {}

        def describe(self):
            raise KeyError("model")

    with pytest.raises(UsageError) as raised:
        evals_repro.run(retriever=Broken(), name="broken", results_dir="unused-results")
    assert raised.value.one_line().startswith(
        f"method object 'broken' ({__name__}:{Broken.__qualname__}): describe() raised KeyError: 'model': "
        "describe() must return a dict"
    )


def recorded(**changes) -> dict:
    base = {
        "distribution": "acme-search",
        "version": "1.3.0",
        "group": "evals_repro.embedders",
        "target": "acme_search.evals:Embedder",
        "describe": {"model": "acme/embed-v3", "dimension": 768},
        "install": "editable",
        "sources": "a" * 32,
    }
    return {k: v for k, v in {**base, **changes}.items() if v is not None}


@pytest.mark.parametrize(
    ("new", "line"),
    [
        (recorded(version="1.4.0", sources="b" * 32), "acme-search 1.3.0 -> 1.4.0"),
        (recorded(sources="b" * 32), "sources of acme-search (editable) changed"),
        (
            recorded(describe={"model": "acme/embed-v4", "prompts": "e5"}),
            'describe() changed: dimension 768 removed, model "acme/embed-v3" -> "acme/embed-v4", prompts "e5" added',
        ),
        (recorded(install=None, sources=None), "installed editable -> from an index"),
        (recorded(target="acme_search.v2:Embedder"), "acme_search.evals:Embedder -> acme_search.v2:Embedder"),
        (
            recorded(version="2.0.0", describe={"model": "m" * 80}),
            f'acme-search 1.3.0 -> 2.0.0; describe() changed: dimension 768 removed, model "acme/embed-v3" -> "{"m" * 56}...',
        ),
    ],
)
def test_what_changed_is_said_in_a_few_words(new, line):
    assert I.what_changed(recorded(), new) == line


def test_a_change_line_names_three_keys_and_counts_the_rest():
    new = recorded(describe={"a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    assert (
        I.what_changed(recorded(describe={}), new) == "describe() changed: a 1 added, b 2 added, c 3 added (and 2 more)"
    )


def test_a_record_from_before_identities_says_so():
    old = {k: v for k, v in recorded(install=None, sources=None).items() if k != "describe"}
    assert I.what_changed(old, recorded()) == "recorded before evals-repro kept a plugin's describe() and sources"


def test_the_ledger_says_a_change_once_and_a_plan_does_not_record_it(tmp_path):
    origin = PluginOrigin("acme-search", "1.3.0", "evals_repro.embedders", "acme_search.evals:Embedder")
    old = ComponentIdentity("embedder", "acme-embed", origin, {"model": "m"})
    upgraded = PluginOrigin("acme-search", "1.4.0", "evals_repro.embedders", "acme_search.evals:Embedder")
    new = ComponentIdentity("embedder", "acme-embed", upgraded, {"model": "m"})
    assert I.note_identity(tmp_path, old) is None  # the first: nothing to compare with
    assert I.note_identity(tmp_path, old) is None
    line = "acme-embed: acme-search 1.3.0 -> 1.4.0; nothing computed by its previous identity is reused"
    assert I.note_identity(tmp_path, new, keep=False) == line  # a plan says it, and leaves the record as it was
    assert I.note_identity(tmp_path, new) == line
    assert I.note_identity(tmp_path, new) is None


class Bag:
    name = "bag"
    model = "crc32-bow"
    dimension = 8
    supports_images = False
    text_style = evals_repro.PageStyle.LABELLED

    def embed(self, items, input_type):
        raise AssertionError("not called")

    def describe(self):
        return {"model": self.model, "dimension": self.dimension}


def test_the_embedding_cache_keys_on_the_identity_and_a_builtin_on_its_describe():
    origin = PluginOrigin("acme-search", "1.3.0", "evals_repro.embedders", "acme:Bag")
    upgraded = PluginOrigin("acme-search", "1.4.0", "evals_repro.embedders", "acme:Bag")

    def key(identity: ComponentIdentity | None) -> bytes:
        return settings_digest(GuardedEmbedder(Bag(), "bag", Usage(), identity=identity), "document")

    same_describe = [ComponentIdentity("embedder", "bag", o, Bag().describe()) for o in (origin, upgraded)]
    edited = ComponentIdentity("embedder", "bag", origin, Bag().describe(), "editable", "b" * 32)
    keys = {key(same_describe[0]), key(same_describe[1]), key(edited), key(None)}
    assert len(keys) == 4
    # A built-in's key is what it always was (caches on disk stay valid): FORMAT, describe() and the input type.
    described = json.dumps(Bag().describe(), sort_keys=True, ensure_ascii=False)
    expected = hashlib.blake2b(f"{FORMAT}\0{described}\0document".encode(), digest_size=16).digest()
    assert key(None) == expected


class Lengths:
    name = "lengths"
    model = "chars"
    component_identity: ComponentIdentity | None = None

    def __init__(self):
        self.calls = 0

    def rerank(self, query, documents):
        self.calls += 1
        return [float(len(d)) for d in documents]

    def describe(self):
        return {"model": self.model}


class First:
    name = "first"

    def run(self, subset, queries, top_k):
        return {q.id: {"a": 2.0, "b": 1.0} for q in queries}

    def describe(self):
        return {"first": True}


def test_the_rerank_journal_reuses_answers_only_under_the_same_identity(tmp_path):
    subset = Subset("toy", "s", "english", [Page("a", "x"), Page("b", "xyz")], [Query("q1", "q", "english")], {})
    origin = PluginOrigin("acme-search", "1.3.0", "evals_repro.rerankers", "acme:Lengths")
    upgraded = PluginOrigin("acme-search", "1.4.0", "evals_repro.rerankers", "acme:Lengths")

    def calls(origin: PluginOrigin) -> int:
        reranker = Lengths()
        reranker.component_identity = ComponentIdentity("reranker", "lengths", origin, reranker.describe())
        RerankedRetriever(First(), reranker, 2, journal_dir=tmp_path).run(subset, subset.queries, 10)
        return reranker.calls

    assert calls(origin) == 1
    assert calls(origin) == 0  # journaled
    assert calls(upgraded) == 1  # same describe(), another version: paid again
    assert calls(origin) == 0

"""The registries read their built-in names from the component sources and import a module only when one of its
names is looked up: what they read is what the modules register, and a lookup imports one module, not all."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from evals_repro.base.registry import (
    EMBEDDERS,
    LOADERS,
    METHODS,
    RERANKERS,
    Registration,
    Registry,
    registered_names,
)

REGISTRIES = [METHODS, EMBEDDERS, RERANKERS, LOADERS]


def sources(registry: Registry) -> dict[str, str]:
    """Module name -> source, for every module of the registry's packages that registers through it."""
    found = {}
    for package_name in registry.packages:
        package = importlib.import_module(package_name)
        for info in pkgutil.iter_modules(package.__path__):
            text = "" if info.ispkg else (Path(package.__path__[0]) / f"{info.name}.py").read_text(encoding="utf-8")
            if f"{registry.attribute}.register" in text:
                found[f"{package_name}.{info.name}"] = text
    return found


@pytest.mark.parametrize("registry", REGISTRIES, ids=lambda r: r.kind)
def test_the_names_read_from_the_sources_are_the_names_the_modules_register(registry):
    modules = sources(registry)
    for module in modules:  # the old way: every module imported, each registers its names
        importlib.import_module(module)
    registered = {name: e.module for name, e in registry._entries.items() if e.plugin is None}
    fresh = Registry(registry.kind, registry.attribute, registry.packages)  # reads sources; registers nothing
    fresh._discover_builtins()
    unreadable = {m for m, text in modules.items() if registered_names(text, registry.attribute) is None}
    assert fresh._declared == {name: m for name, m in registered.items() if m not in unreadable}
    assert len(registered) >= 5 and len(unreadable) <= 2  # rerankers' vllm and rerank-api name theirs by constant
    assert registry.names() == sorted(registered) == sorted(e.name for e in registry.entries() if e.plugin is None)
    prefixes = registry.__dict__.get("_prefixes", {})
    assert dict(fresh._prefix_modules) == {p: registered[shown] for p, (shown, _) in prefixes.items()}


def test_a_module_whose_names_are_not_literals_is_imported_to_read_them():
    """rerankers/vllm.py registers `QWEN3_8B.name`: it is imported on discovery, and its names are listed."""
    assert registered_names("@RERANKERS.register(SPEC.name, description='x')\n", "RERANKERS") is None
    assert registered_names('@RERANKERS.register("a")\n@RERANKERS.register(B)\n', "RERANKERS") is None
    assert {"qwen3-8b", "zerank-2", "rerank-api"} <= set(RERANKERS.names())


def test_registrations_are_read_as_python_writes_them():
    source = '''
"""Docs may say `@EMBEDDERS.register("not-this")`."""
@EMBEDDERS.register("a", "b", description="x, (\\"y\\")", key_env="K")
def one(name, ctx): ...
@EMBEDDERS.register(
    "c",
    options=("store_prefix",),
)
def two(name, ctx): ...
    @EMBEDDERS.register("d")
@EMBEDDERS.register_prefix("openai:", "openai:<model>", rest=r"[^+]+", options=OPTIONS)
@RERANKERS.register("e")
def three(name, ctx): ...
'''
    assert registered_names(source, "EMBEDDERS") == [
        Registration(("a", "b")),
        Registration(("c",), has_options=True),
        Registration(("d",)),
        Registration(("openai:<model>",), "openai:", has_options=True),
    ]
    assert registered_names(source, "RERANKERS") == [Registration(("e",))]


def test_the_options_a_first_stage_takes_are_known_without_importing_those_that_take_none():
    for registry in (METHODS, EMBEDDERS):
        for entry in registry.entries():
            assert registry.options_of(entry.name) == tuple(entry.extra.get("options", ())), entry.name
    assert METHODS.options_of("mixedbread-images+rerank") == ("store_prefix", "rerank_top_k")
    assert METHODS.options_of("voyage-4-large") is None and EMBEDDERS.options_of("no-such") is None


LOOKUP = """
import json, sys
from evals_repro.base.registry import EMBEDDERS, LOADERS, METHODS, RERANKERS
def components():
    return sorted(m for m in sys.modules if m.split(".")[1:2] in (["embedders"], ["rerankers"], ["retrieval"],
                  ["stores"]) and m.count(".") == 2)
steps = {}
steps["names"] = (len(RERANKERS.names()) + len(METHODS.names()) + len(EMBEDDERS.names()), components())
try:
    METHODS.require("no-such-method")
except Exception as exc:
    steps["unknown"] = (exc.one_line(), components())
steps["options"] = (EMBEDDERS.options_of("voyage-4") or METHODS.options_of("bm25"), components())
steps["voyage"] = (EMBEDDERS.get("voyage-4-large").key_env, components())
steps["family"] = (EMBEDDERS.get("openai:text-embedding-3-large").name, components())
print(json.dumps(steps))
"""


def test_a_lookup_imports_the_one_module_that_registers_the_name():
    done = subprocess.run([sys.executable, "-c", LOOKUP], capture_output=True, text=True, timeout=120, check=True)
    steps = json.loads(done.stdout.strip().splitlines()[-1])
    count, imported = steps["names"]
    # Listing names imports no component: every built-in spells its names out in its source.
    assert count > 15 and imported == [], imported
    message, imported = steps["unknown"]
    assert "unknown method 'no-such-method'" in message and "bm25" in message and imported == steps["names"][1]
    options, imported = steps["options"]
    assert options == [] and imported == steps["names"][1]  # neither voyage.py nor bm25.py imported to say so
    key, imported = steps["voyage"]
    assert key == "VOYAGE_API_KEY" and "evals_repro.embedders.voyage" in imported
    assert not {"evals_repro.embedders.cohere", "evals_repro.embedders.gemini", "evals_repro.retrieval.bm25"} & set(
        imported
    )
    name, imported = steps["family"]
    assert name == "openai:text-embedding-3-large" and "evals_repro.embedders.openai_compat" in imported

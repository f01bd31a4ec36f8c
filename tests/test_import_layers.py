"""The import graph of `src/evals_repro`: no cycles, and no import runs from a lower layer up to a higher one.

Every import counts, at module level or inside a function (a lazy import is still a dependency). Between
units, subpackages are collapsed to one node each (`evals_repro.metrics`), top-level modules are nodes of their
own; inside a subpackage, every module (and the package's `__init__`) is a node, so a circle among a
subpackage's own modules is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "evals_repro"

# The layers, lowest first. A unit may import its own layer and those below it, never one above: an import
# from a lower package up to a higher one fails `test_no_import_runs_up_a_layer`. Each package's docstring
# names its layer (`Layer: <name>.`), so the map a newcomer reads is the one this test holds.
LAYERS: list[tuple[str, set[str]]] = [
    ("base", {"base"}),
    ("sources", {"metrics", "providers", "benchmarks"}),
    ("components", {"embedders", "retrieval", "rerankers", "stores"}),
    ("methods", {"methods", "records"}),
    ("runner", {"runner"}),
    ("products", {"reporting", "rcp", "serving", "study", "vidore_paper", "planning", "reproduce"}),
    ("interface", {"api", "cli", "__main__", "evals_repro"}),
]
# Inside base, a module imports only those before it.
BASE_ORDER = [
    "errors",
    "images",
    "usage",
    "io",
    "progress",
    "locks",
    "matrix_file",
    "call_journal",
    "data",
    "contracts",
    "context",
    "identity",
    "registry",
    "rendering",
    "pagestore",
]


def modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in (SRC / PACKAGE).rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_package)
    return found


def module_edges() -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = {name: set() for name in known}
    for name, (path, is_package) in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                elif (node.module or "").startswith(PACKAGE):
                    module = str(node.module)
                else:
                    continue
                # `from . import metrics` imports the submodule; `from .data import Page` imports the module
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names if alias.name.startswith(PACKAGE)]
            for target in targets:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges


def unit(module: str) -> str:
    """`evals_repro.metrics.ap` -> `metrics`; `evals_repro.base.data` -> `data`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def unit_edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for source, targets in module_edges().items():
        for target in targets:
            if unit(source) != unit(target):
                graph.setdefault(unit(source), set()).add(unit(target))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_lazy_imports():
    """The graph is real: known edges, including ones made inside functions, are there."""
    graph = unit_edges()
    assert "metrics" in graph["runner"]  # `from .. import metrics as M` inside runner.scoring
    assert "methods" in graph["runner"] and "base" in graph["methods"]
    assert "benchmarks" in graph["rcp"]


def inner_edges() -> dict[str, set[str]]:
    """Module-level edges that stay inside one subpackage (its `__init__` included)."""
    return {
        source: {target for target in targets if unit(target) == unit(source)}
        for source, targets in module_edges().items()
    }


def test_no_import_cycles():
    assert cycles(unit_edges()) == []


def test_no_import_cycles_inside_a_subpackage():
    assert cycles(inner_edges()) == []


def test_the_inner_graph_sees_a_subpackage_and_its_init(tmp_path, monkeypatch):
    """A circle through a package's `__init__` (`from . import app` in a module the package imports) is found."""
    package = tmp_path / PACKAGE / "tools"
    package.mkdir(parents=True)
    (tmp_path / PACKAGE / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from . import commands\napp = 1\n")
    (package / "commands.py").write_text("from . import app\n")
    (package / "plain.py").write_text("from .helpers import x\n")
    (package / "helpers.py").write_text("def x():\n    from .plain import y\n")
    monkeypatch.setattr(__import__(__name__), "SRC", tmp_path)
    found = cycles(inner_edges())
    assert [f"{PACKAGE}.tools", f"{PACKAGE}.tools.commands"] in found
    assert [f"{PACKAGE}.tools.helpers", f"{PACKAGE}.tools.plain"] in found


def test_a_cycle_is_found_when_there_is_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def layer_of(unit_name: str) -> int:
    for rank, (_, members) in enumerate(LAYERS):
        if unit_name in members:
            return rank
    raise AssertionError(f"package {unit_name!r} is in no layer: add it to LAYERS and name its layer in its docstring")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every edge from a unit to a unit of a higher layer, as `source -> target (layer -> layer)`."""
    found = []
    for source, targets in sorted(graph.items()):
        for target in sorted(targets):
            if layer_of(target) > layer_of(source):
                found.append(f"{source} -> {target} ({LAYERS[layer_of(source)][0]} -> {LAYERS[layer_of(target)][0]})")
    return found


def test_every_unit_has_a_layer():
    for name in module_edges():
        layer_of(unit(name))


def test_no_import_runs_up_a_layer():
    assert upward_imports(unit_edges()) == []


def test_an_upward_import_is_found_when_there_is_one():
    graph = {"metrics": {"base", "runner"}, "runner": {"metrics"}, "cli": {"runner", "reporting"}}
    assert upward_imports(graph) == ["metrics -> runner (sources -> runner)"]


def test_each_package_names_its_layer_in_its_docstring():
    for layer, members in LAYERS:
        for member in members:
            init = SRC / PACKAGE / member / "__init__.py"
            if not init.exists():
                continue
            doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
            assert f"Layer: {layer}." in doc, f"{init} does not say `Layer: {layer}.` in its docstring"


def test_base_modules_import_only_those_before_them():
    edges = module_edges()
    prefix = f"{PACKAGE}.base."
    inside = {name[len(prefix) :] for name in edges if name.startswith(prefix)}
    assert inside == set(BASE_ORDER), f"base holds {sorted(inside ^ set(BASE_ORDER))}: place it in BASE_ORDER"
    for position, name in enumerate(BASE_ORDER):
        allowed = {f"{prefix}{before}" for before in BASE_ORDER[:position]}
        reached = {target for target in edges[f"{prefix}{name}"] if target != f"{PACKAGE}.base"}
        assert reached <= allowed, f"base.{name} imports {sorted(reached - allowed)}"

"""The import graph of `src/evals_repro`: no cycles, and the foundations import none of the layers above them.

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

# Modules every layer may use; they must import none of the layers above (only each other, in this order).
FOUNDATIONS = ["errors", "usage", "io", "progress", "data", "context", "registry", "rendering"]
# What the foundations and the scoring layer must never reach.
UPPER = {
    "evaluation",
    "run_request",
    "resume",
    "results",
    "report",
    "breakdown",
    "pipeline",
    "pooling",
    "api",
    "cli",
    "study",
    "rcp",
}


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
    """`evals_repro.metrics.ap` -> `metrics`; `evals_repro.data` -> `data`."""
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
    assert "metrics" in graph["evaluation"]  # `from . import metrics as M` inside score_run
    assert "pipeline" in graph["evaluation"] and "registry" in graph["pipeline"]
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


def test_foundations_import_nothing_above_them():
    graph = unit_edges()
    for position, name in enumerate(FOUNDATIONS):
        allowed = set(FOUNDATIONS[:position])
        reached = graph.get(name, set())
        assert reached <= allowed, f"{name} imports {sorted(reached - allowed)}"


def test_components_do_not_reach_the_runner_or_the_cli():
    graph = unit_edges()
    for name in ("metrics", "benchmarks", "providers", "embedders", "retrieval", "rerankers", "stores"):
        assert not (graph.get(name, set()) & UPPER), f"{name} imports {sorted(graph[name] & UPPER)}"

"""Every third-party package src/ imports is declared in pyproject.toml, and the SDKs whose exception classes
providers/errors_map.py classifies are pinned exactly (a new release can rename or regroup them).

Read from the source's AST (every import, at module level or inside a function) and from pyproject; an import
guarded by `except ImportError` is optional (the code works without it) and need not be declared. A package
arriving only through another one's dependencies is not declared: it can vanish with that one's next release.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "evals_repro"


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> dict[str, str]:
    """Distribution name -> its requirement, from [project].dependencies."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = {}
    for requirement in project["dependencies"]:
        name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        assert name, requirement
        found[normalized(name.group(0))] = requirement
    return found


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Inside the body of a `try` one of whose handlers catches ImportError (or ModuleNotFoundError)."""
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.Try) and child in parent.body:
            for handler in parent.handlers:
                caught = handler.type
                names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
                if any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in names):
                    return True
        child, parent = parent, parents.get(parent)
    return False


def imports(path: Path) -> list[tuple[str, int, bool]]:
    """(module imported, line, guarded) for every absolute import in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        found += [(module, node.lineno, _guarded(node, parents)) for module in modules]
    return found


@functools.cache
def third_party() -> dict[str, list[str]]:
    """Module imported (as written) -> where, for every unguarded import of a package outside the stdlib."""
    where: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for module, line, guarded in imports(path):
            top = module.split(".")[0]
            if guarded or top in sys.stdlib_module_names or top in ("evals_repro", "__future__"):
                continue
            where.setdefault(module, []).append(f"{path.relative_to(ROOT)}:{line}")
    return where


@functools.cache
def providers_of() -> dict[str, list[str]]:
    return metadata.packages_distributions()


@functools.cache
def distribution_of(module: str) -> str:
    """The installed distribution providing `module`; a namespace package (`google`) is told by its subpackage."""
    parts = module.split(".")
    candidates = providers_of().get(parts[0], [])
    assert candidates, f"{module}: no installed distribution provides it"
    if len(set(candidates)) == 1 or len(parts) == 1:
        return normalized(candidates[0])
    prefix = "/".join(parts[:2])
    owners = {
        normalized(name)
        for name in candidates
        if any(str(f).startswith((prefix + "/", prefix + ".py")) for f in metadata.distribution(name).files or [])
    }
    assert len(owners) == 1, f"{module}: provided by {sorted(owners) or sorted(candidates)}"
    return owners.pop()


def test_every_imported_package_is_declared():
    wanted = declared()
    missing = sorted(
        f"{distribution_of(module)} (import {module}: {where[0]})"
        for module, where in third_party().items()
        if distribution_of(module) not in wanted
    )
    assert missing == [], "declare these in pyproject.toml [project].dependencies: " + "; ".join(missing)


def test_the_sdks_errors_map_classifies_are_pinned_exactly():
    """The packages whose exception classes a `classify_<provider>` function imports: voyageai, cohere,
    google-genai, mixedbread, openai."""
    tree = ast.parse((SRC / "providers" / "errors_map.py").read_text(encoding="utf-8"))
    sdks = set()
    for function in tree.body:
        if isinstance(function, ast.FunctionDef) and function.name.startswith(("classify_", "_classify_")):
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    sdks |= {alias.name for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    sdks.add(node.module)
    distributions = {distribution_of(module) for module in sdks} - {"httpx"}  # httpx: the transport, pinned too
    assert distributions >= {"voyageai", "cohere", "google-genai", "mixedbread", "openai"}, distributions
    wanted = declared()
    loose = sorted(
        wanted[d] for d in distributions | {"httpx"} if not re.fullmatch(r"[A-Za-z0-9._-]+==[^,;]+", wanted[d])
    )
    assert loose == [], f"pin these exactly (==): {loose}"


def test_the_checks_see_what_they_are_about():
    """The AST walk finds imports inside functions and tells a guarded import from a plain one."""
    found = {module: guarded for module, _, guarded in imports(SRC / "providers" / "errors_map.py")}
    assert found["httpx"] is False and found["requests"] is True and found["voyageai"] is False
    assert "pydantic" in third_party() and "markdown_it" in third_party()
    assert distribution_of("google.genai") == "google-genai" and distribution_of("yaml") == "pyyaml"

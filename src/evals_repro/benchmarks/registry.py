"""Find declarations, resolve `--benchmark NAME|PATH`, and dispatch to the declared loader.

Loaders are referenced as `module:function` strings so that `datasets` and friends are
imported only when a benchmark that needs them is loaded.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from ..data import Subset, check_subset
from ..errors import UsageError, choices
from .declaration import BenchmarkDeclaration, LoadOptions, SubsetDeclaration, parse_declaration

# Loader kind -> "module:function(declaration, subset_name, options) -> Subset".
LOADERS: dict[str, str] = {
    "beir": "evals_repro.benchmarks.beir:load",
    "vidore-raw": "evals_repro.benchmarks.vidore:load",
    "mteb": "evals_repro.benchmarks.mteb:load",
    "miracl-vision": "evals_repro.benchmarks.miracl:load",
    "rcp": "evals_repro.benchmarks.rcp:load",
}

USER_FOLDER_LANGUAGE = "english"


def benchmarks_dir() -> Path:
    """The folder of declarations: $EVALS_REPRO_BENCHMARKS, else the source tree's `benchmarks/` (a
    checkout), else the copy an installed wheel carries (`evals_repro/_benchmarks`)."""
    env = os.environ.get("EVALS_REPRO_BENCHMARKS")
    if env:
        return Path(env)
    tree = Path(__file__).resolve().parents[3]
    if (tree / "pyproject.toml").is_file() and (tree / "benchmarks").is_dir():
        return tree / "benchmarks"
    from importlib.resources import files

    return Path(str(files("evals_repro") / "_benchmarks"))


def list_benchmarks() -> list[BenchmarkDeclaration]:
    folder = benchmarks_dir()
    return [parse_declaration(path) for path in sorted(folder.glob("*.toml"))]


def _user_folder(path: Path, language: str | None) -> BenchmarkDeclaration:
    """A BEIR-layout folder given as --benchmark PATH: one subset, or one per child folder."""

    def is_beir(folder: Path) -> bool:
        return (folder / "corpus.jsonl").exists() or (folder / "queries.jsonl").exists()

    native = language or USER_FOLDER_LANGUAGE
    path_name = path.resolve().name  # `path.name` is empty for "." or "folder/.."
    if is_beir(path):
        subsets = [SubsetDeclaration(path_name, native, {"path": str(path.resolve())})]
    else:
        children = sorted(child for child in path.iterdir() if child.is_dir() and is_beir(child))
        if not children:
            raise UsageError(
                f"--benchmark {path}: no corpus.jsonl/queries.jsonl/qrels/test.tsv found",
                "point it at a folder in BEIR layout (or a folder of such folders)",
            )
        subsets = [SubsetDeclaration(c.name, native, {"path": str(c.resolve())}) for c in children]
    return BenchmarkDeclaration(
        name=path_name,
        loader="beir",
        query_languages=[native],
        subsets=subsets,
        description=f"user folder {path}",
        origin=path,
    )


def get_benchmark(name_or_path: str, language: str | None = None) -> BenchmarkDeclaration:
    """A declared benchmark by name, or a user folder in BEIR layout by path."""
    declared = {decl.name: decl for decl in list_benchmarks()}
    if name_or_path in declared:
        return declared[name_or_path]
    path = Path(name_or_path)
    if path.is_dir():
        return _user_folder(path, language)
    raise UsageError(
        f"unknown benchmark '{name_or_path}'",
        f"choose from {choices(sorted(declared))} or give a folder in BEIR layout",
    )


def resolve_subsets(decl: BenchmarkDeclaration, requested: list[str] | None) -> list[str]:
    if not requested:
        return decl.subset_names
    for name in requested:
        decl.subset(name)
    return list(requested)


def load_subset(decl: BenchmarkDeclaration, name: str, options: LoadOptions | None = None) -> Subset:
    """Load one subset through its declared loader and run the consistency checks."""
    options = options or LoadOptions()
    decl.subset(name)
    target = LOADERS.get(decl.loader)
    if target is None:
        raise UsageError(
            f"benchmark {decl.name}: unknown loader '{decl.loader}' in {decl.origin}",
            f"choose from {choices(sorted(LOADERS))}",
        )
    module_name, func_name = target.split(":")
    loader = getattr(importlib.import_module(module_name), func_name)
    subset = loader(decl, name, options)
    report = check_subset(subset, origin=str(subset.source.get("origin", decl.origin or "")))
    subset.source.setdefault("checks", report.counts)
    return subset

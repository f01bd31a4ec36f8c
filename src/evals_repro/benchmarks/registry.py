"""Find declarations, resolve `--benchmark NAME|PATH`, and dispatch to the declared loader.

Loaders register their layout names beside their code (`@LOADERS.register("beir")`); loader
modules import `datasets` and friends inside functions, so only a benchmark that needs them pays.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ..data import Subset, check_subset
from ..errors import UsageError, choices
from ..registry import LOADERS
from .declaration import BenchmarkDeclaration, LoadOptions, SubsetDeclaration, parse_declaration

log = logging.getLogger(__name__)

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
        if language is not None:  # it would be ignored: the declaration names every subset's language
            raise UsageError(
                f"--language {language} applies to a BEIR folder given as --benchmark PATH; benchmark "
                f"{name_or_path} declares its own languages",
                "drop --language",
            )
        return declared[name_or_path]
    path = Path(name_or_path)
    if path.is_dir():
        return _user_folder(path, language)
    if path.exists() or os.sep in name_or_path or name_or_path.startswith("."):  # meant as a folder
        why = "is a file, not a folder" if path.exists() else "does not exist"
        raise UsageError(
            f"--benchmark {name_or_path} {why}",
            "give a folder in BEIR layout (corpus.jsonl, queries.jsonl, qrels/test.tsv) or a declared benchmark: "
            + choices(sorted(declared)),
        )
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
    # A subset may name its own loader (the `text` benchmark mixes Hub and ir_datasets subsets).
    kind = str(decl.subset_source(name).get("loader") or decl.loader)
    entry = LOADERS.get(kind)
    if entry is None:
        raise UsageError(
            f"benchmark {decl.name}: unknown loader '{kind}' in {decl.origin}",
            f"choose from {choices(LOADERS.names())}",
        )
    if any(decl.subset_source(s).get("gated") for s in decl.subset_names):
        from .hub import require_access

        require_access(decl)
    subset = entry.factory(decl, name, options)
    report = check_subset(subset, origin=str(subset.source.get("origin", decl.origin or "")))
    subset.source.setdefault("checks", report.counts)
    for note in subset.source.get("notes", []):
        log.warning(note)
    return subset


def subset_counts(subset: Subset) -> dict[str, int]:
    """What a subset holds (recorded by the study per dataset): queries, pages, judgments, positives,
    nugget and changed-document counts where the subset has them."""
    counts = {
        "queries": len(subset.queries),
        "pages": len(subset.pages),
        "judgments": sum(len(docs) for docs in subset.qrels.values()),
        "relevant": sum(1 for docs in subset.qrels.values() for grade in docs.values() if grade > 0),
    }
    if subset.subtopics is not None:
        counts["subtopics"] = sum(len(nuggets) for nuggets in subset.subtopics.values())
    if subset.changed_docs is not None:
        counts["changed_docs"] = sum(len(docs) for docs in subset.changed_docs.values())
    return counts

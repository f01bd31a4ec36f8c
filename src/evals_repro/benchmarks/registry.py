"""Find declarations, resolve `--benchmark NAME|PATH`, and dispatch to the declared loader.

Loaders register their layout names beside their code (`@LOADERS.register("beir")`); loader
modules import `datasets` and friends inside functions, so only a benchmark that needs them pays.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from ..base.data import Subset, check_subset
from ..base.errors import UsageError, choices
from ..base.identity import PluginOrigin
from ..base.registry import LOADERS, Entry, entry_points_of, plugin_origin
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
    """The declared benchmarks: `benchmarks/*.toml`, then those plugins add (group `evals_repro.benchmarks`)."""
    folder = benchmarks_dir()
    declared = [parse_declaration(path) for path in sorted(folder.glob("*.toml"))]
    return declared + plugin_benchmarks({decl.name: decl for decl in declared})


PLUGIN_GROUP = "evals_repro.benchmarks"
_PLUGIN_TARGETS: dict[tuple[str, str], Any] = {}  # (entry point name, value) -> its object, imported once


def _plugin_target(entry_point: Any, origin: PluginOrigin) -> Any:
    """The entry point's object, imported once; None (after one warning line) when its import fails."""
    key = (entry_point.name, entry_point.value)
    if key not in _PLUGIN_TARGETS:
        try:
            _PLUGIN_TARGETS[key] = entry_point.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is named and skipped, nothing else breaks
            log.warning(
                f"plugin benchmark '{entry_point.name}' ({origin.label()}) failed to import: "
                f"{type(exc).__name__}: {exc}; skipped (fix or uninstall {origin.distribution})"
            )
            _PLUGIN_TARGETS[key] = None
    return _PLUGIN_TARGETS[key]


def _declaration_files(target: Any) -> list[Path] | None:
    """The TOML declarations a benchmark plugin points at: a folder of them (a path, or a package whose
    folder holds them) or one file; None when the target is not a path (then it is a loader)."""
    if isinstance(target, ModuleType):
        files = getattr(target, "__file__", None)
        target = Path(files).parent if files else None
    elif isinstance(target, (str, os.PathLike)):
        target = Path(str(target))
    else:
        return None
    if target is None:
        return []
    return sorted(target.glob("*.toml")) if target.is_dir() else [target]


def plugin_benchmarks(builtin: dict[str, BenchmarkDeclaration]) -> list[BenchmarkDeclaration]:
    """Declarations from benchmark plugins; a callable entry point is a loader (registered under its
    name). A benchmark or loader name already taken is refused in one warning line naming both."""
    found: dict[str, BenchmarkDeclaration] = {}
    for entry_point in entry_points_of(PLUGIN_GROUP):
        origin = plugin_origin(entry_point)
        target = _plugin_target(entry_point, origin)
        if target is None:
            continue
        files = _declaration_files(target)
        if files is None:
            if not callable(target):
                log.warning(
                    f"plugin benchmark '{entry_point.name}' ({origin.label()}) is neither a folder of "
                    "declarations nor a loader; skipped (point the entry point at a folder, or a function)"
                )
            elif target_entry(entry_point.name, target) is None and not LOADERS.refused(entry_point.name):
                LOADERS.add_plugin(Entry("loader", entry_point.name, target, module=entry_point.module, plugin=origin))
            continue
        for path in files:
            decl = parse_declaration(path)
            decl = replace(decl, extra={**decl.extra, "plugin": origin.as_dict()})
            taken = builtin.get(decl.name) or found.get(decl.name)
            if taken is not None:
                owner = taken.extra.get("plugin")
                who = (
                    f"plugin {owner['distribution']} {owner['version']}, {taken.origin}"
                    if owner
                    else f"built-in, {taken.origin}"
                )
                log.warning(
                    f"benchmark '{decl.name}' (plugin {origin.label()}, {path}) clashes with the "
                    f"{'' if owner else 'built-in '}benchmark '{decl.name}' ({who}); refused (rename it)"
                )
                continue
            found[decl.name] = decl
    return list(found.values())


def target_entry(name: str, target: Any) -> Entry | None:
    """The loader entry already holding this very object (listing twice must not warn of a clash with itself)."""
    entry = LOADERS.get(name)
    return entry if entry is not None and entry.factory is target else None


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

"""A benchmark declaration: subsets, query languages, native language, loader and pinned source.

Declarations are TOML files in the top-level `benchmarks/` folder, so a benchmark in a known
layout is added with a file, not code. See `benchmarks/README.md` for the fields.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataError, choices


@dataclass(frozen=True)
class SubsetDeclaration:
    name: str
    native_language: str
    # Loader-specific source fields for this subset (repo, revision, path, ...), merged over
    # the benchmark-level [source] table.
    source: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BenchmarkDeclaration:
    name: str
    loader: str
    query_languages: list[str]
    subsets: list[SubsetDeclaration]
    description: str = ""
    source: dict[str, Any] = field(default_factory=dict)
    # Part of `rerank-study --benchmark all`.
    study: bool = False
    # Where the declaration came from (a TOML file, or a user folder for --benchmark PATH).
    origin: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pooled(self) -> bool:
        """Whether each query ranks its judged candidate pool (`view = "reranking"`, the rcp reranking view)."""
        return self.extra.get("view") == "reranking"

    @property
    def subset_names(self) -> list[str]:
        return [s.name for s in self.subsets]

    def subset(self, name: str) -> SubsetDeclaration:
        for item in self.subsets:
            if item.name == name:
                return item
        from ..errors import UsageError

        raise UsageError(
            f"unknown subset '{name}' for benchmark {self.name}",
            f"choose from {choices(self.subset_names)}",
        )

    def subset_source(self, name: str) -> dict[str, Any]:
        merged = dict(self.source)
        merged.update(self.subset(name).source)
        return merged


@dataclass(frozen=True)
class LoadOptions:
    """How to load: which content, an optional revision override, a cache folder, a view."""

    content: str = "markdown"  # "markdown" or "images"
    revision: str | None = None
    cache_dir: Path | None = None
    view: str | None = None  # loader-specific view (rcp: reranking | retrieval); None = declared default


_REQUIRED = ("name", "loader", "query_languages", "subsets")


def parse_declaration(path: Path) -> BenchmarkDeclaration:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"{path}: not valid TOML ({exc})", "fix the declaration file") from None
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        raise DataError(
            f"{path}: missing field(s) {', '.join(missing)}",
            f"a declaration needs {choices(_REQUIRED)}",
        )
    subsets_raw = raw["subsets"]
    default_native = raw.get("native_language")
    subsets: list[SubsetDeclaration] = []
    if isinstance(subsets_raw, list):
        subsets_raw = {name: {} for name in subsets_raw}
    if not isinstance(subsets_raw, dict) or not subsets_raw:
        raise DataError(f"{path}: field 'subsets' must be a non-empty table or list", "list the subsets")
    for name, spec in subsets_raw.items():
        spec = dict(spec or {})
        native = spec.pop("native_language", default_native)
        if not native:
            raise DataError(
                f"{path}: subset '{name}' has no native_language",
                "set native_language on the subset or at the top level",
            )
        source = spec.pop("source", {})
        source.update(spec)
        subsets.append(SubsetDeclaration(name=name, native_language=native, source=source))
    known = set(_REQUIRED) | {"description", "source", "study", "native_language"}
    return BenchmarkDeclaration(
        name=raw["name"],
        loader=raw["loader"],
        query_languages=list(raw["query_languages"]),
        subsets=subsets,
        description=raw.get("description", ""),
        source=dict(raw.get("source", {})),
        study=bool(raw.get("study", False)),
        origin=path,
        extra={k: v for k, v in raw.items() if k not in known},
    )

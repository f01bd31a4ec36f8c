"""A benchmark declaration: subsets, query languages, native language, loader and pinned source.

Declarations are TOML files in the top-level `benchmarks/` folder, so a benchmark in a known
layout is added with a file, not code. See `benchmarks/README.md` for the fields.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import DataError, UsageError, choices

CONTENTS = ("markdown", "images")


@dataclass(frozen=True)
class SubsetDeclaration:
    name: str
    native_language: str
    # Loader-specific source fields for this subset (repo, revision, path, ...), merged over
    # the benchmark-level [source] table.
    source: dict[str, Any] = field(default_factory=dict)


STUDY_MEASURES = ("ndcg_at_10", "recall_at_10", "mrr_at_10", "map_at_100")
LATENCY_UNITS = ("benchmark", "subset")


@dataclass(frozen=True)
class StudySettings:
    """How a benchmark takes part in `rerank-study` (the `[study]` table; `study = true` takes defaults).

    - `group`: the column of the overall table it counts in (benchmarks sharing a group form one
      group; each group weighs the same in the overall score). Default: the benchmark's name.
    - `measure`: the group's headline measure, averaged over its subsets (datasets).
    - `measures`: what the study tables and quality.csv show for it (the headline first).
    - `first_stage`: the method whose top 100 is frozen; `first_stages`: the ones `--first-stage`
      may pick for it (others keep their own first stage).
    - `latency_unit`: `benchmark` samples `--samples` queries spread over its subsets; `subset`
      samples `--samples` queries from every subset (each subset is a dataset of its own).
    """

    group: str
    measure: str = "ndcg_at_10"
    measures: tuple[str, ...] = STUDY_MEASURES
    first_stage: str = "bm25"
    first_stages: tuple[str, ...] = ("bm25",)
    latency_unit: str = "benchmark"


@dataclass(frozen=True)
class BenchmarkDeclaration:
    name: str
    loader: str
    query_languages: list[str]
    subsets: list[SubsetDeclaration]
    description: str = ""
    source: dict[str, Any] = field(default_factory=dict)
    # Part of `rerank-study --benchmark all` when set (the `study` field or `[study]` table).
    study_settings: StudySettings | None = None
    # Where the declaration came from (a TOML file, or a user folder for --benchmark PATH).
    origin: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def study(self) -> bool:
        return self.study_settings is not None

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
        from ..base.errors import UsageError

        raise UsageError(
            f"unknown subset '{name}' for benchmark {self.name}",
            f"choose from {choices(self.subset_names)}",
        )

    def subset_source(self, name: str) -> dict[str, Any]:
        merged = dict(self.source)
        merged.update(self.subset(name).source)
        return merged

    @property
    def contents(self) -> tuple[str, ...]:
        """The page contents the source carries (`contents = [...]`; default both)."""
        return tuple(self.extra.get("contents") or CONTENTS)

    def check_content(self, content: str) -> None:
        """Refuse a `--content` the source does not carry, before anything is downloaded."""
        if content not in self.contents:
            what = {"markdown": "page text", "images": "page images"}
            raise UsageError(
                f"benchmark {self.name} carries {' and '.join(what[c] for c in self.contents)} only, "
                f"not {what.get(content, content)} (--content {content})",
                f"use --content {self.contents[0]}"
                + (
                    " with a method that reads page images (see `evals-repro methods`)" if content == "markdown" else ""
                ),
            )


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
    contents = raw.get("contents")
    if contents is not None and (
        not isinstance(contents, list) or not contents or any(c not in CONTENTS for c in contents)
    ):
        raise DataError(
            f"{path}: field 'contents' must list page contents the source carries",
            f'choose from {choices(CONTENTS)}, e.g. contents = ["images"]',
        )
    known = set(_REQUIRED) | {"description", "source", "study", "study_first_stage", "native_language"}
    return BenchmarkDeclaration(
        name=raw["name"],
        loader=raw["loader"],
        query_languages=list(raw["query_languages"]),
        subsets=subsets,
        description=raw.get("description", ""),
        source=dict(raw.get("source", {})),
        study_settings=parse_study(path, raw),
        origin=path,
        extra={k: v for k, v in raw.items() if k not in known},
    )


def parse_study(path: Path, raw: dict[str, Any]) -> StudySettings | None:
    """`study = true` (defaults), a `[study]` table, or nothing; `study_first_stage` is the older spelling."""
    value = raw.get("study", False)
    if value is False:
        return None
    table = dict(value) if isinstance(value, dict) else {}
    if not isinstance(value, (bool, dict)):
        raise DataError(f"{path}: field 'study' must be true, false or a table", "write study = true or [study]")
    unknown = sorted(set(table) - {"group", "measure", "measures", "first_stage", "first_stages", "latency_unit"})
    if unknown:
        raise DataError(
            f"{path}: unknown field(s) {', '.join(unknown)} in [study]",
            "valid: group, measure, measures, first_stage, first_stages, latency_unit",
        )
    first = str(table.get("first_stage") or raw.get("study_first_stage") or "bm25")
    first_stages = tuple(str(f) for f in table.get("first_stages", [first]))
    if first not in first_stages:
        first_stages = (first, *first_stages)
    measure = str(table.get("measure", "ndcg_at_10"))
    measures = tuple(str(m) for m in table.get("measures", STUDY_MEASURES))
    if measure not in measures:
        measures = (measure, *measures)
    unit = str(table.get("latency_unit", "benchmark"))
    if unit not in LATENCY_UNITS:
        raise DataError(f"{path}: [study] latency_unit '{unit}' is not valid", f"choose from {choices(LATENCY_UNITS)}")
    return StudySettings(
        group=str(table.get("group") or raw["name"]),
        measure=measure,
        measures=measures,
        first_stage=first,
        first_stages=first_stages,
        latency_unit=unit,
    )

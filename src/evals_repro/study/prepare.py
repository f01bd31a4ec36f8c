"""`rerank-study prepare`: retrieve the top 100 per native-language query once and freeze it.

Every reranker later scores exactly these candidates, so quality differences come from the
rerankers alone. A benchmark's `[study]` table names its first stage (ViDoRe: a Markdown store;
everything else BM25, whose index is cached by corpus and implementation fingerprint) and the
first stages `--first-stage` may pick for it.

The first stage retrieves with the query text alone; queries sharing a text (FollowIR's two
instruction variants) are retrieved once and share their candidates. The reranker reads the
text and the instruction (`Query.reranker_text`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.context import MethodContext
from ..base.errors import UsageError, choices
from ..base.locks import study_writer
from ..base.progress import progress_bar
from ..base.rendering import page_text, query_text
from ..benchmarks import LoadOptions, get_benchmark, list_benchmarks, load_subset
from ..benchmarks.declaration import BenchmarkDeclaration, StudySettings
from ..benchmarks.registry import resolve_subsets, subset_counts
from ..methods.pipeline import PipelineSpec
from ..records.runs import ordered, write_trec_run
from ..rerankers.pipeline import PAGE_STYLE
from ..runner.subset_result import package_versions
from .candidates import Candidate, candidates_path, read_candidates, write_candidates
from .manifest import PROTOCOL_VERSION, host_description, load_manifest, recorded_session, require_same, save_manifest

log = logging.getLogger(__name__)

TOP_K = 100
DEFAULT_FIRST_STAGE = "bm25"


@dataclass
class PrepareRequest:
    benchmarks: list[str] = field(default_factory=lambda: ["all"])
    subsets: list[str] | None = None
    study_dir: Path = Path("results/rerank-study")
    first_stage: str | None = None
    cache_dir: Path = Path("cache")
    options: dict[str, Any] = field(default_factory=dict)


def study_benchmarks(names: list[str]) -> list[BenchmarkDeclaration]:
    if is_all(names):
        declared = [d for d in list_benchmarks() if d.study]
        if not declared:
            raise UsageError("no benchmark is declared with study = true", "name one with --benchmark")
        return declared
    return [get_benchmark(name) for name in names]


def is_all(names: list[str]) -> bool:
    return names in (["all"], [])


def settings_of(decl: BenchmarkDeclaration) -> StudySettings:
    """The benchmark's `[study]` settings; a benchmark named without one takes the defaults."""
    return decl.study_settings or StudySettings(group=decl.name)


def first_stages(decls: list[BenchmarkDeclaration], override: str | None, named: bool) -> dict[str, str]:
    """The first stage per benchmark. `--first-stage` applies to every benchmark named on the
    command line; with `all`, only to those whose `[study] first_stages` list it."""
    chosen = {d.name: settings_of(d).first_stage for d in decls}
    if override is None:
        return chosen
    takers = [d.name for d in decls if named or override in settings_of(d).first_stages]
    if not takers:
        allowed = sorted({f for d in decls for f in settings_of(d).first_stages})
        raise UsageError(
            f"--first-stage {override} is not a first stage of any study benchmark",
            f"choose from {choices(allowed)} (or name the benchmark with --benchmark)",
        )
    chosen.update(dict.fromkeys(takers, override))
    return chosen


def first_stage_for(decl: BenchmarkDeclaration, override: str | None) -> str:
    return override or settings_of(decl).first_stage or DEFAULT_FIRST_STAGE


def study_entry(decl: BenchmarkDeclaration) -> dict[str, Any]:
    """What the quality, latency and report stages read of the declaration, recorded per dataset."""
    from .scoring import check_measures

    settings = settings_of(decl)
    check_measures(settings.measures)
    return {
        "group": settings.group,
        "measure": settings.measure,
        "measures": list(settings.measures),
        "first_stages": list(settings.first_stages),
        "latency_unit": settings.latency_unit,
    }


def prepare(request: PrepareRequest, echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Freeze candidates for every requested subset; returns the manifest."""
    echo = echo or log.info  # no callback: the lines are log records (the CLI shows them)
    study_dir = Path(request.study_dir)
    decls = study_benchmarks(request.benchmarks)
    if request.subsets and len(decls) != 1:
        raise UsageError(
            "--subsets needs exactly one --benchmark", f"add --benchmark, one of {choices(d.name for d in decls)}"
        )
    firsts = first_stages(decls, request.first_stage, named=not is_all(request.benchmarks))
    for decl in decls:  # a bad [study] measure stops before any work
        study_entry(decl)
    from ..benchmarks.hub import require_access

    for decl in decls:  # a gated source without a token stops before anything is retrieved
        require_access(decl)
    with study_writer(study_dir, echo) as command:
        manifest = load_manifest(study_dir) or {}
        protocol = {"version": PROTOCOL_VERSION, "top_k": TOP_K, "query_languages": "native"}
        require_same(study_dir, "the protocol", manifest.get("protocol"), protocol)
        for decl in decls:  # a changed first stage is refused before anything is built or recorded
            first = firsts[decl.name]
            for name in resolve_subsets(decl, request.subsets):
                stored = manifest.get("datasets", {}).get(f"{decl.name}/{name}")
                if stored is not None and stored.get("first_stage") not in (None, first):
                    _require_same_dataset(study_dir, f"{decl.name}/{name}", stored, {**stored, "first_stage": first})
        manifest["protocol"] = protocol
        manifest.setdefault("datasets", {})
        manifest["versions"] = package_versions()
        manifest["host"] = host_description(manifest.get("host", {}).get("location"))
        # The groups the overall table expects (blank until each is complete).
        suite = manifest.setdefault("suite", [])
        for group in (settings_of(d).group for d in decls):
            if group not in suite:
                suite.append(group)
        with recorded_session(study_dir, manifest, command) as outcome:
            for decl in decls:
                first = firsts[decl.name]
                ctx = MethodContext(benchmark=decl.name, cache_dir=Path(request.cache_dir), options=request.options)
                retriever = PipelineSpec.parse(first).build(ctx)
                for name in resolve_subsets(decl, request.subsets):
                    _prepare_subset(study_dir, manifest, decl, name, first, retriever, echo)
                    save_manifest(study_dir, manifest)
            outcome["status"] = "completed"
    return manifest


def _require_same_dataset(study_dir: Path, key: str, stored: dict, entry: dict) -> None:
    """A subset frozen before must be frozen again from the same data and first stage; say which one changed."""
    if stored.get("first_stage") not in (None, entry["first_stage"]):
        raise UsageError(
            f"{Path(study_dir) / 'manifest.json'}: {key} was frozen with first stage {stored['first_stage']}, "
            f"not {entry['first_stage']}",
            f"rerun with --first-stage {stored['first_stage']}, or pick a new --study-dir for "
            f"{entry['first_stage']} candidates (results from different inputs must not mix)",
        )
    if stored.get("data_digest") not in (None, entry["data_digest"]):
        revisions = (stored.get("revision"), entry.get("revision"))
        what = (
            f"revision {revisions[0]} -> {revisions[1]}"
            if revisions[0] != revisions[1]
            else "same revision, different content"
        )
        raise UsageError(
            f"{Path(study_dir) / 'manifest.json'}: the data of {key} changed since this study was prepared ({what})",
            "pick a new --study-dir (results from different inputs must not mix)",
        )


def _prepare_subset(
    study_dir: Path,
    manifest: dict,
    decl: BenchmarkDeclaration,
    name: str,
    first: str,
    retriever,
    echo: Callable[[str], None],
) -> None:
    key = f"{decl.name}/{name}"
    subset = load_subset(decl, name, LoadOptions())
    entry = {
        "benchmark": decl.name,
        "subset": name,
        "first_stage": first,
        "study": study_entry(decl),
        # mteb's rule for the task this subset reproduces (FiQA2018): scoring drops a document whose id is the query's
        "ignore_identical_ids": bool(decl.subset_source(name).get("ignore_identical_ids", False)),
        "data_digest": subset.data_digest(),
        "revision": subset.source.get("revision"),
        "source": {k: v for k, v in subset.source.items() if k not in ("origin", "checks")},
    }
    stored = manifest["datasets"].get(key)
    path = candidates_path(study_dir, decl.name, name)
    if stored is not None:
        _require_same_dataset(study_dir, key, stored, entry)
        if path.exists() and len(read_candidates(path, decl.name, name)) == len(stored.get("query_ids", [])):
            echo(f"{key}: candidates already frozen ({path}), kept")
            return
    queries = [
        q
        for q in subset.queries_in([subset.native_language])
        if any(s > 0 for s in subset.qrels.get(q.id, {}).values())
    ]
    # One retrieval per distinct text: the variants of an instruction pair share their candidates.
    first_of_text: dict[str, str] = {}
    for query in queries:
        first_of_text.setdefault(query.text, query.id)
    distinct = [q for q in queries if first_of_text[q.text] == q.id]
    with progress_bar(f"{key}: first stage ({first})", len(distinct)) as bar:
        run = retriever.run(subset, distinct, TOP_K)
        bar.advance(len(distinct))
    # The frozen candidates go through the saved-run writer, so they are exactly a `run`'s ranking.
    frozen = {q.id: dict(ordered(run.get(first_of_text[q.text], {}))[:TOP_K]) for q in queries}
    write_trec_run(path.with_name(f"{name}.run.gz"), frozen, first)
    # Only the candidates' texts (a stored corpus such as MS MARCO's 8.8M passages is never read whole).
    pages = subset.page_by_id()
    texts = {doc: page_text(pages[doc], PAGE_STYLE) for ranking in frozen.values() for doc in ranking}
    records = []
    for query in sorted(queries, key=lambda q: q.id):
        top = ordered(frozen[query.id])
        records.append(
            Candidate.make(
                decl.name,
                name,
                query.id,
                query_text(query, reranker=True),
                [d for d, _ in top],
                [float(s) for _, s in top],
                texts,
                dict(subset.qrels[query.id]),
                candidate_extra(subset, query),
            )
        )
    entry["candidates_digest"] = write_candidates(path, records, texts)
    entry["counts"] = subset_counts(subset)
    entry["query_ids"] = [r.query_id for r in records]
    manifest["datasets"][key] = entry
    echo(f"{key}: {len(records)} queries frozen with {first} -> {path}")


def candidate_extra(subset, query) -> dict[str, Any]:
    """What measures beyond the qrels need for this query: nuggets, or its instruction pair."""
    extra: dict[str, Any] = {}
    if subset.subtopics is not None:
        extra["subtopics"] = subset.subtopics.get(query.id, {})
    pair = query.metadata.get("pair")
    if pair is not None and subset.changed_docs is not None:
        extra.update(pair=str(pair), variant=query.metadata.get("variant"))
        extra["changed_docs"] = list(subset.changed_docs.get(str(pair), []))
    return extra

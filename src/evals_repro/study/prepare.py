"""`rerank-study prepare`: retrieve the top 100 per native-language query once and freeze it.

Every reranker later scores exactly these candidates, so quality differences come from the
rerankers alone. ViDoRe-like benchmarks may declare `study_first_stage` (e.g. a Markdown store);
everything else uses BM25, whose index is cached by corpus and implementation fingerprint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..benchmarks import LoadOptions, get_benchmark, list_benchmarks, load_subset
from ..benchmarks.declaration import BenchmarkDeclaration
from ..benchmarks.registry import resolve_subsets
from ..context import MethodContext
from ..errors import UsageError, choices
from ..evaluation import package_versions
from ..pipeline import PipelineSpec
from ..progress import progress_bar
from ..rendering import page_text, query_text
from ..rerankers.pipeline import PAGE_STYLE
from ..runs import ordered, write_trec_run
from .candidates import Candidate, candidates_path, read_candidates, write_candidates
from .lock import study_writer
from .manifest import PROTOCOL_VERSION, host_description, load_manifest, recorded_session, require_same, save_manifest

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
    if names in (["all"], []):
        declared = [d for d in list_benchmarks() if d.study]
        if not declared:
            raise UsageError("no benchmark is declared with study = true", "name one with --benchmark")
        return declared
    return [get_benchmark(name) for name in names]


def first_stage_for(decl: BenchmarkDeclaration, override: str | None) -> str:
    return override or decl.extra.get("study_first_stage") or DEFAULT_FIRST_STAGE


def prepare(request: PrepareRequest, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Freeze candidates for every requested subset; returns the manifest."""
    study_dir = Path(request.study_dir)
    decls = study_benchmarks(request.benchmarks)
    if request.subsets and len(decls) != 1:
        raise UsageError(
            "--subsets needs exactly one --benchmark", f"add --benchmark, one of {choices(d.name for d in decls)}"
        )
    with study_writer(study_dir, echo) as command:
        manifest = load_manifest(study_dir) or {}
        protocol = {"version": PROTOCOL_VERSION, "top_k": TOP_K, "query_languages": "native"}
        require_same(study_dir, "the protocol", manifest.get("protocol"), protocol)
        manifest["protocol"] = protocol
        manifest.setdefault("datasets", {})
        manifest["versions"] = package_versions()
        manifest["host"] = host_description(manifest.get("host", {}).get("location"))
        with recorded_session(study_dir, manifest, command) as outcome:
            for decl in decls:
                first = first_stage_for(decl, request.first_stage)
                ctx = MethodContext(benchmark=decl.name, cache_dir=Path(request.cache_dir), options=request.options)
                retriever = PipelineSpec.parse(first).build(ctx)
                for name in resolve_subsets(decl, request.subsets):
                    _prepare_subset(study_dir, manifest, decl, name, first, retriever, echo)
                    save_manifest(study_dir, manifest)
            outcome["status"] = "completed"
    return manifest


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
        "data_digest": subset.data_digest(),
        "revision": subset.source.get("revision"),
        "source": {k: v for k, v in subset.source.items() if k not in ("origin", "checks")},
    }
    stored = manifest["datasets"].get(key)
    path = candidates_path(study_dir, decl.name, name)
    if stored is not None:
        require_same(
            study_dir,
            f"dataset {key}",
            {k: stored.get(k) for k in ("data_digest", "first_stage")},
            {k: entry[k] for k in ("data_digest", "first_stage")},
        )
        if path.exists() and len(read_candidates(path, decl.name, name)) == len(stored.get("query_ids", [])):
            echo(f"{key}: candidates already frozen ({path}), kept")
            return
    queries = [
        q
        for q in subset.queries_in([subset.native_language])
        if any(s > 0 for s in subset.qrels.get(q.id, {}).values())
    ]
    with progress_bar(f"{key}: first stage ({first})", len(queries)) as bar:
        run = retriever.run(subset, queries, TOP_K)
        bar.advance(len(queries))
    # The frozen candidates go through the saved-run writer, so they are exactly a `run`'s ranking.
    frozen = {q.id: dict(ordered(run.get(q.id, {}))[:TOP_K]) for q in queries}
    write_trec_run(path.with_name(f"{name}.run.gz"), frozen, first)
    texts = {page.id: page_text(page, PAGE_STYLE) for page in subset.pages}
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
            )
        )
    entry["candidates_digest"] = write_candidates(path, records, texts)
    entry["query_ids"] = [r.query_id for r in records]
    manifest["datasets"][key] = entry
    echo(f"{key}: {len(records)} queries frozen with {first} -> {path}")

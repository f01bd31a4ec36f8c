"""Datasets through `ir_datasets` (pinned by uv.lock): TREC DL 2019/2020 passage over MS MARCO.

Declaration fields: `dataset` (an ir_datasets id, e.g. `msmarco-passage/trec-dl-2019/judged`),
`counts` (published queries/docs/judged, checked by `textsets.check_counts`) and optionally
`version_guard` (see below).

ir_datasets downloads on first use into `$IR_DATASETS_HOME` (default `~/.ir_datasets`; read when
`ir_datasets` is first imported), verifying each download's md5; a file already in its cache is
used as is. Its page text is the dataset's `default_text()`. The corpus is streamed once into a
page store keyed by the docs file's path, size and mtime and ir_datasets' version, so DL19 and
DL20 (one collection) share one store, one fingerprint and so one BM25 index; the 8.8M passages are
never held as Python objects.

`version_guard`: ir_datasets' migrator deletes `msmarco-passage/collection.tsv` (a 3 GB file that
takes a 1 GB download to rebuild) when `msmarco-passage/irds_version.txt` is missing or not `v2`.
A loader that finds the collection but not that version refuses to touch it and says how to fix it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..base.data import Query, Subset
from ..base.errors import ConfigurationError, DataError, UsageError
from ..base.registry import LOADERS
from .declaration import BenchmarkDeclaration, LoadOptions
from .textsets import check_counts, corpus_store, read_judgments


def _home() -> Path:
    from ir_datasets import util

    return Path(util.home_path())


def _check_version_guard(guard: dict[str, Any], label: str) -> None:
    home = _home()
    version_file = home / str(guard["version_file"])
    protected = [home / str(path) for path in guard.get("files", [])]
    present = [path for path in protected if path.exists()]
    if not present:
        return
    found = version_file.read_text(encoding="utf-8") if version_file.is_file() else None
    if found != guard["version"]:
        raise DataError(
            f"{label}: {present[0]} exists but {version_file} "
            + (f"holds '{found}'" if found is not None else "is missing")
            + "; ir_datasets would delete the collection and download it again",
            f"if that file is ir_datasets' own (encoding-fixed) copy, write exactly '{guard['version']}' into "
            f"{version_file}; otherwise delete it",
        )


def _fetch_error(label: str, dataset_id: str, exc: BaseException) -> ConfigurationError:
    return ConfigurationError(
        f"{label}: ir_datasets could not provide {dataset_id} ({type(exc).__name__}: {str(exc)[:160]})",
        f"run once with network access, or place its files under {_home()} (IR_DATASETS_HOME) as ir_datasets "
        "caches them",
    )


@LOADERS.register(
    "ir-datasets",
    description="Datasets through `ir_datasets` (pinned by uv.lock): TREC DL 2019/2020 passage over MS MARCO",
)
def load(decl: BenchmarkDeclaration, name: str, options: LoadOptions) -> Subset:
    source = decl.subset_source(name)
    dataset_id = source.get("dataset")
    label = f"{decl.name}/{name}"
    if not dataset_id:
        raise DataError(
            f"benchmark {decl.name}: subset {name} declares no dataset in {decl.origin}", 'add dataset = "..."'
        )
    if options.revision:
        raise UsageError(
            f"{label}: --revision does not apply to ir_datasets sources (their version is pinned by uv.lock)",
            "drop --revision, or pick Hub subsets with --subset",
        )
    if source.get("version_guard"):
        _check_version_guard(dict(source["version_guard"]), label)
    import ir_datasets

    try:
        dataset = ir_datasets.load(str(dataset_id))
    except KeyError:
        raise DataError(
            f"{label}: ir_datasets has no dataset '{dataset_id}'", "fix dataset in the declaration"
        ) from None
    language = decl.subset(name).native_language
    try:
        qrels, facts = read_judgments(
            ((q.query_id, q.doc_id, q.relevance) for q in dataset.qrels_iter()), f"{dataset_id} qrels"
        )
        queries = [
            Query(str(q.query_id), q.default_text(), language)
            for q in dataset.queries_iter()
            if str(q.query_id) in qrels
        ]
        docs_path = Path(dataset.docs_path())
    except (OSError, RuntimeError, ConnectionError) as exc:
        raise _fetch_error(label, str(dataset_id), exc) from None
    except Exception as exc:  # requests' errors when the download hosts are unreachable
        if type(exc).__module__.split(".")[0] in ("requests", "urllib3"):
            raise _fetch_error(label, str(dataset_id), exc) from None
        raise

    stat = os.stat(docs_path)
    description = {
        "kind": "ir-datasets",
        "ir_datasets": ir_datasets.__version__,
        "docs": str(docs_path.resolve()),
        "bytes": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "namespace": dataset.docs_namespace(),
    }

    def pages():
        for doc in dataset.docs_iter():
            yield str(doc.doc_id), doc.default_text()

    store = corpus_store(description, options.cache_dir, pages, f"{dataset.docs_namespace()} ({label})", None)
    loaded = {"queries": len(queries), "docs": len(store), "judged": facts["judged_rows"]}
    counts = check_counts(f"{label} ({dataset_id})", source.get("counts"), loaded)
    return Subset(
        benchmark=decl.name,
        name=name,
        native_language=language,
        pages=store,
        queries=queries,
        qrels=qrels,
        source={
            "kind": "ir-datasets",
            "dataset": str(dataset_id),
            "revision": f"ir_datasets=={ir_datasets.__version__}",
            "counts": counts,
            "origin": f"ir_datasets {dataset_id} in {_home()}",
        },
    )

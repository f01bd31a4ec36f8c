"""Raw ViDoRe v3 layout (`vidore/vidore_v3_<domain>`): configs `corpus`, `queries`, `qrels`.

Every language copy of a question is its own row with its own `query_id`, and rows do not come
in language blocks, so a query's language is read from its `language` column only. Integer ids
become strings. Query metadata (query_type from the `query_types` column, query_format, content_type, relevant_pages) is kept
for the report breakdowns; pages keep doc_id and page_number_in_doc.
"""

from __future__ import annotations

from ..base.data import Page, Qrels, Query, Subset
from ..base.errors import DataError
from ..base.registry import LOADERS
from .declaration import BenchmarkDeclaration, LoadOptions
from .hub import check_content, hub_provenance, image_bytes, load_config, pinned_source, require_columns

# metadata field -> source column
QUERY_METADATA = {"query_type": "query_types", "query_format": "query_format", "content_type": "content_type"}


def read_qrels(dataset, where: str, query_col: str, page_col: str) -> Qrels:
    require_columns(dataset, where, (query_col, page_col, "score"))
    columns = dataset.select_columns([query_col, page_col, "score"]).to_dict()
    qrels: Qrels = {}
    for qid, pid, score in zip(columns[query_col], columns[page_col], columns["score"]):
        qrels.setdefault(str(qid), {})[str(pid)] = int(score)
    return qrels


def relevant_pages(qrels: Qrels, query_id: str) -> int:
    return sum(1 for score in qrels.get(query_id, {}).values() if score > 0)


@LOADERS.register("vidore-raw", description="ViDoRe v3 raw Hub layout: configs corpus, queries, qrels")
def load(decl: BenchmarkDeclaration, name: str, options: LoadOptions) -> Subset:
    check_content(decl, options)
    source, repo, revision = pinned_source(decl, name, options)
    split = str(source.get("split", "test"))
    where = f"{repo}@{revision}"

    queries_ds, commit = load_config(repo, "queries", split, revision)
    qrels_ds, _ = load_config(repo, "qrels", split, commit)
    images = ("image",) if options.content == "images" else ()
    corpus_ds, _ = load_config(repo, "corpus", split, commit, images=images)
    where = f"{repo}@{commit}"

    qrels = read_qrels(qrels_ds, f"{where} qrels", "query_id", "corpus_id")
    wanted = set(decl.query_languages)
    require_columns(queries_ds, f"{where} queries", ("query_id", "query", "language", *QUERY_METADATA.values()))
    rows = queries_ds.select_columns(["query_id", "query", "language", *QUERY_METADATA.values()]).to_dict()
    queries: list[Query] = []
    for index, qid in enumerate(rows["query_id"]):
        language = rows["language"][index]
        if not language:
            raise DataError(f"{where} queries: query {qid} has no language", "every row needs a language value")
        if language not in wanted:
            continue
        query_id = str(qid)
        # Stored under the field names every loader uses (data.QUERY_METADATA_FIELDS).
        metadata = {field: rows[column][index] for field, column in QUERY_METADATA.items()}
        metadata["relevant_pages"] = relevant_pages(qrels, query_id)
        queries.append(Query(query_id, str(rows["query"][index] or ""), str(language), metadata))
    kept = {q.id for q in queries}
    qrels = {qid: docs for qid, docs in qrels.items() if qid in kept}

    columns = ["corpus_id", "doc_id", "markdown", "page_number_in_doc", *images]
    require_columns(corpus_ds, f"{where} corpus", tuple(columns))
    corpus = corpus_ds.select_columns(columns).to_dict()
    pages = []
    for index, pid in enumerate(corpus["corpus_id"]):
        image = image_bytes(corpus["image"][index], f"{where} corpus page {pid}") if images else None
        metadata = {"doc_id": corpus["doc_id"][index], "page_number_in_doc": corpus["page_number_in_doc"][index]}
        pages.append(Page(str(pid), str(corpus["markdown"][index] or ""), image=image, metadata=metadata))

    return Subset(
        benchmark=decl.name,
        name=name,
        native_language=decl.subset(name).native_language,
        pages=pages,
        queries=queries,
        qrels=qrels,
        source=hub_provenance(decl, source, repo, commit, ["corpus", "queries", "qrels"], where, split=split),
    )

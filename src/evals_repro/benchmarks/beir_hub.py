"""BEIR datasets as mteb publishes them on the Hub (`mteb/fiqa`, `mteb/trec-covid`, ...), pinned by sha.

Layout (mteb's retrieval loader; `mteb/fiqa` card at 27a1688): config `corpus` (split `corpus`:
`_id`, `title`, `text`), config `queries` (split `queries`: `_id`, `text`, holding the queries of
*every* split), and config `default` = qrels (splits train/dev/test: `query-id`, `corpus-id`,
`score` as float64). Declaration fields (all optional): `corpus_config`, `queries_config`,
`qrels_config` (default `default`; mteb falls back to a `qrels` config, so do we), `split`.

Only queries judged in the split's qrels are kept (fiqa's queries config holds 6,648 queries, its
test split 648). Page text is `(title + " " + text).strip()`; the corpus goes to a page store
(hotpotqa has 5.2M documents), written once per repo and commit.
"""

from __future__ import annotations

from ..base.data import Query, Subset
from ..base.errors import DataError
from ..base.registry import LOADERS
from .declaration import BenchmarkDeclaration, LoadOptions
from .hub import hub_provenance, load_config, pinned_source, require_columns
from .textsets import check_counts, corpus_store, document_text, read_judgments

BATCH = 10_000


@LOADERS.register(
    "beir-hub",
    description="BEIR datasets as mteb publishes them on the Hub (`mteb/fiqa`, `mteb/trec-covid`, ...), pinned by sha",
)
def load(decl: BenchmarkDeclaration, name: str, options: LoadOptions) -> Subset:
    source, repo, revision = pinned_source(decl, name, options)
    split = str(source.get("split", "test"))
    qrels_config = str(source.get("qrels_config", "default"))
    queries_config = str(source.get("queries_config", "queries"))
    corpus_config = str(source.get("corpus_config", "corpus"))
    language = decl.subset(name).native_language

    try:
        qrels_ds, commit = load_config(repo, qrels_config, split, revision)
    except DataError:
        if qrels_config != "default":
            raise
        qrels_config = "qrels"  # mteb's fallback for repos whose qrels config is named `qrels`
        qrels_ds, commit = load_config(repo, qrels_config, split, revision)
    where = f"{repo}@{commit}"
    require_columns(qrels_ds, f"{where} {qrels_config}/{split}", ("query-id", "corpus-id", "score"))
    table = qrels_ds.select_columns(["query-id", "corpus-id", "score"]).to_dict()
    qrels, facts = read_judgments(
        zip(table["query-id"], table["corpus-id"], table["score"]), f"{where} {qrels_config}/{split}"
    )

    queries_ds, _ = load_config(repo, queries_config, "queries", commit)
    require_columns(queries_ds, f"{where} {queries_config}", ("_id", "text"))
    rows = queries_ds.select_columns(["_id", "text"]).to_dict()
    queries = [
        Query(str(qid), str(text or ""), language) for qid, text in zip(rows["_id"], rows["text"]) if str(qid) in qrels
    ]

    corpus_ds, _ = load_config(repo, corpus_config, "corpus", commit)
    require_columns(corpus_ds, f"{where} {corpus_config}", ("_id", "text"))
    has_title = "title" in corpus_ds.column_names
    columns = ["_id", "text", *(["title"] if has_title else [])]

    def pages():
        for batch in corpus_ds.select_columns(columns).iter(batch_size=BATCH):
            titles = batch["title"] if has_title else [None] * len(batch["_id"])
            for pid, body, title in zip(batch["_id"], batch["text"], titles):
                yield str(pid), document_text(title, body)

    description = {
        "kind": "beir-hub",
        "repo": repo,
        "commit": commit,
        "config": corpus_config,
        "text": "title + ' ' + text, stripped",
    }
    store = corpus_store(description, options.cache_dir, pages, f"{decl.name}/{name}", len(corpus_ds))

    loaded = {"queries": len(queries), "docs": len(store), "judged": facts["judged_rows"]}
    counts = check_counts(f"{decl.name}/{name} ({where})", source.get("counts"), loaded)
    if facts["negative_grades"]:
        counts["negative_grades_as_non_relevant"] = facts["negative_grades"]
    return Subset(
        benchmark=decl.name,
        name=name,
        native_language=language,
        pages=store,
        queries=queries,
        qrels=qrels,
        source=hub_provenance(
            decl, source, repo, commit, [corpus_config, queries_config, qrels_config], where, counts=counts, split=split
        ),
    )

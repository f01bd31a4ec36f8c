"""FreshStack (`freshstack/queries-oct-2024` + `freshstack/corpus-oct-2024`): one subset per topic.

Queries: config = topic, split `test`; columns `query_id`, `query_title`, `query_text`, `nuggets`
(`_id`, `text`, `relevant_corpus_ids`, `non_relevant_corpus_ids`), answers and metadata (not
loaded). Corpus: config = topic, split `train`; `_id`, `text`, optional `title`.

- Query text = `query_title + " " + query_text`, as FreshStack's own loader builds it.
- Nuggets are for scoring only: `Subset.subtopics[query][nugget][doc]` = 1 for each relevant id,
  0 for each judged non-relevant id (the nugget qrels of FreshStack's alpha-nDCG and coverage); an id
  listed as both is non-relevant, as FreshStack's loader leaves it (its last write).
  A nugget belongs to the query whose row lists it. (FreshStack's own code re-derives that from
  the nugget id prefix, which would also hand a query the nuggets of any query whose id it
  prefixes; reading the row avoids that trap.)
- Query qrels: a document's grade is the number of the query's nuggets it supports; a document
  judged only non-relevant gets 0 (FreshStack's `nuggets_to_query_qrels`).

Two repos, two revisions: `revision` (queries) and `corpus_revision`. `--revision SHA` overrides
the queries repo's; `--revision queries=SHA,corpus=SHA` sets both.
"""

from __future__ import annotations

from ..base.data import Qrels, Query, Subset, SubtopicQrels
from ..base.errors import DataError, UsageError
from ..base.registry import LOADERS
from .declaration import BenchmarkDeclaration, LoadOptions
from .hub import FULL_SHA, config_spec, hub_provenance, load_config, pinned_source, require_columns, require_text
from .hub_retrieval import loaded_counts, read_pages


def _revisions(decl: BenchmarkDeclaration, name: str, options: LoadOptions) -> tuple[str | None, str]:
    """(queries revision override, corpus revision) from --revision and the declaration."""
    source = decl.subset_source(name)
    corpus = str(source.get("corpus_revision") or source.get("revision") or "")
    given = options.revision
    if not given or "=" not in given:
        return given, corpus
    parts = {}
    for item in given.split(","):
        key, _, value = item.partition("=")
        if key.strip() not in ("queries", "corpus") or not value.strip():
            raise UsageError(f"--revision {given}: expected queries=SHA,corpus=SHA", "or pass one sha for the queries")
        parts[key.strip()] = value.strip()
    return parts.get("queries"), parts.get("corpus", corpus)


@LOADERS.register(
    "freshstack", description="FreshStack on the Hub: queries (with nuggets) and corpus repos, one config per topic"
)
def load(decl: BenchmarkDeclaration, name: str, options: LoadOptions) -> Subset:
    require_text(decl, options)
    queries_revision, corpus_revision = _revisions(decl, name, options)
    source, repo, revision = pinned_source(decl, name, LoadOptions(revision=queries_revision))
    corpus_repo = str(source.get("corpus_repo") or "").format(subset=name)
    if not corpus_repo or not corpus_revision:
        raise DataError(
            f"benchmark {decl.name}: subset {name} declares no corpus_repo/corpus_revision in {decl.origin}",
            'add corpus_repo = "owner/name" and corpus_revision = "<sha>" to [source]',
        )
    if not FULL_SHA.fullmatch(corpus_revision) and not source.get("unpinned"):
        raise DataError(f"benchmark {decl.name}: corpus_revision '{corpus_revision}' is not a commit sha", "pin one")
    language = decl.subset(name).native_language

    config, split = config_spec(source, "queries", name, "{subset}", "test")
    queries_ds, commit = load_config(repo, config, split, revision)
    where = f"{repo}@{commit} {config}"
    require_columns(queries_ds, where, ("query_id", "query_title", "query_text", "nuggets"))
    table = queries_ds.select_columns(["query_id", "query_title", "query_text", "nuggets"]).to_dict()
    queries: list[Query] = []
    qrels: Qrels = {}
    subtopics: SubtopicQrels = {}
    for qid, title, text, nuggets in zip(
        table["query_id"], table["query_title"], table["query_text"], table["nuggets"]
    ):
        qid = str(qid)
        judged: dict[str, dict[str, int]] = {}
        for nugget in nuggets or []:
            # As FreshStack's loader: relevant ids written 1, then non-relevant ids 0 (a document in both is 0)
            docs = {str(d): 1 for d in nugget.get("relevant_corpus_ids") or []}
            docs.update({str(d): 0 for d in nugget.get("non_relevant_corpus_ids") or []})
            judged[str(nugget["_id"])] = docs
        if not judged:
            continue
        grades: dict[str, int] = {}
        for docs in judged.values():
            for doc, rel in docs.items():
                grades[doc] = grades.get(doc, 0) + rel
        subtopics[qid] = judged
        qrels[qid] = grades
        queries.append(Query(qid, f"{title or ''} {text or ''}", language, {"nuggets": len(judged)}))
    if not queries:
        raise DataError(f"{where}: no query carries nuggets", "pick another revision or topic")

    corpus_config, corpus_split = config_spec(source, "corpus", name, "{subset}", "train")
    corpus_ds, corpus_commit = load_config(corpus_repo, corpus_config, corpus_split, corpus_revision)
    pages = read_pages(
        corpus_ds, f"{corpus_repo}@{corpus_commit} {corpus_config}", str(source.get("title_mode", "join"))
    )

    counts = loaded_counts(decl, name, f"{repo}@{commit}", source, queries, pages, qrels)
    return Subset(
        benchmark=decl.name,
        name=name,
        native_language=language,
        pages=pages,
        queries=queries,
        qrels=qrels,
        subtopics=subtopics,
        source=hub_provenance(
            decl,
            source,
            repo,
            commit,
            [config, corpus_config],
            f"{repo}@{commit} + {corpus_repo}@{corpus_commit}",
            pins=[(repo, revision, commit), (corpus_repo, corpus_revision, corpus_commit)],
            counts=counts,
            corpus_repo=corpus_repo,
            corpus_revision=corpus_commit,
            queries_without_nuggets=len(table["query_id"]) - len(queries),
        ),
    )

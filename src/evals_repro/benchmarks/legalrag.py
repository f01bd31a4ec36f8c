"""Legal RAG Bench (`isaacus/legal-rag-bench`): configs `corpus` and `qa`, split `test`.

- corpus: `id`, `title`, `text` (a Markdown passage of the Victorian Criminal Charge Book) and
  optional `footnotes`. The page text is `text`, as the benchmark's own evaluation embeds it;
  `title` is the page title (methods show it above the text). Footnotes are not part of it.
- qa: `id`, `question`, `answer`, `relevant_passage_id`: one gold passage per question, judged 1.
  Answers are for generation judges only and are not loaded.

The official evaluation counts a hit when the gold id is a substring of a retrieved id; this loader
judges exact ids (the qrels, as every measure here reads them). Passages sharing a text under
different ids are therefore distinct pages. The official measure itself is scored beside them under
its own name, `relevant_passage_in_context_at_5` (metrics/published/passage_in_context.py; declared as
the benchmark's `own_measures`).
"""

from __future__ import annotations

from ..base.data import Query, Subset
from ..base.errors import DataError
from ..base.registry import LOADERS
from .declaration import BenchmarkDeclaration, LoadOptions
from .hub import config_spec, hub_provenance, load_config, pinned_source, require_columns, require_text
from .hub_retrieval import loaded_counts, read_pages


@LOADERS.register("legal-rag-bench", description="Legal RAG Bench on the Hub: configs corpus and qa")
def load(decl: BenchmarkDeclaration, name: str, options: LoadOptions) -> Subset:
    require_text(decl, options)
    source, repo, revision = pinned_source(decl, name, options)
    language = decl.subset(name).native_language

    qa_config, qa_split = config_spec(source, "qa", name, "qa", "test")
    qa_ds, commit = load_config(repo, qa_config, qa_split, revision)
    where = f"{repo}@{commit}"
    require_columns(qa_ds, f"{where} {qa_config}", ("id", "question", "relevant_passage_id"))
    table = qa_ds.select_columns(["id", "question", "relevant_passage_id"]).to_dict()
    queries, qrels = [], {}
    for qid, question, gold in zip(table["id"], table["question"], table["relevant_passage_id"]):
        if gold is None or str(gold) == "":
            raise DataError(f"{where} {qa_config}: question {qid} has no relevant_passage_id", "pick another revision")
        queries.append(Query(str(qid), str(question or ""), language))
        qrels[str(qid)] = {str(gold): 1}

    corpus_config, corpus_split = config_spec(source, "corpus", name, "corpus", "test")
    corpus_ds, _ = load_config(repo, corpus_config, corpus_split, commit)
    pages = read_pages(corpus_ds, f"{where} {corpus_config}", str(source.get("title_mode", "page")))

    counts = loaded_counts(decl, name, where, source, queries, pages, qrels)
    return Subset(
        benchmark=decl.name,
        name=name,
        native_language=language,
        pages=pages,
        queries=queries,
        qrels=qrels,
        source=hub_provenance(
            decl,
            source,
            repo,
            commit,
            [qa_config, corpus_config],
            where,
            pins=[(repo, revision, commit)],
            counts=counts,
        ),
    )

"""mteb-format layout: configs `{lang}-corpus`, `{lang}-queries`, `{lang}-qrels`, string ids.

One subset per repo; its query languages are the declaration's. Two quirks of the published
repos (e.g. `vidore/vidore_v3_<d>_mteb_format`) are handled here, so that a benchmark in this
layout needs only a declaration:

- every `{lang}-qrels` config holds the judgments of *all* languages: each is filtered to its
  own language's query ids;
- query ids must be unique across languages (the consistency checks refuse duplicates);
- the corpus is duplicated in every `{lang}-corpus`: it is loaded once, from the subset's
  `corpus_language` (default: its native language).

Page text is the corpus `text` column when there is one (the mteb OCR repos); repos without it
carry page images only and need `--content images`. That is decided before any data file is
downloaded: from the declaration's `contents`, else from the card's declared corpus columns.
"""

from __future__ import annotations

from ..base.data import Page, Qrels, Query, Subset
from ..base.errors import UsageError
from ..base.registry import LOADERS
from .declaration import BenchmarkDeclaration, LoadOptions
from .hub import (
    card_data,
    card_features,
    check_content,
    hub_provenance,
    image_bytes,
    load_config,
    pinned_source,
    require_columns,
)
from .vidore import read_qrels, relevant_pages


@LOADERS.register("mteb", description="mteb Hub layout: configs {lang}-corpus, {lang}-queries, {lang}-qrels")
def load(decl: BenchmarkDeclaration, name: str, options: LoadOptions) -> Subset:
    check_content(decl, options)
    source, repo, revision = pinned_source(decl, name, options)
    split = str(source.get("split", "test"))
    corpus_language = str(source.get("corpus_language") or decl.subset(name).native_language)
    if options.content == "markdown":
        # The corpus config holds every page image: refuse a text run from the card, not after that download.
        features = card_features(card_data(repo, revision), f"{corpus_language}-corpus")
        if features is not None and "text" not in features:
            raise UsageError(
                f"benchmark {decl.name}: {repo}@{revision} {corpus_language}-corpus has page images but no page text",
                "use --content images (or a repo with a corpus text column)",
            )

    queries: list[Query] = []
    qrels: Qrels = {}
    commit = revision
    for language in decl.query_languages:
        queries_ds, commit = load_config(repo, f"{language}-queries", split, commit)
        where = f"{repo}@{commit} {language}-queries"
        require_columns(queries_ds, where, ("id", "text"))
        rows = queries_ds.select_columns(["id", "text"]).to_dict()
        ids = [str(qid) for qid in rows["id"]]
        qrels_ds, _ = load_config(repo, f"{language}-qrels", split, commit)
        all_languages = read_qrels(qrels_ds, f"{repo}@{commit} {language}-qrels", "query-id", "corpus-id")
        own = set(ids)
        language_qrels = {qid: docs for qid, docs in all_languages.items() if qid in own}
        qrels.update(language_qrels)
        for qid, text in zip(ids, rows["text"]):
            metadata = {"relevant_pages": relevant_pages(language_qrels, qid)}
            queries.append(Query(qid, str(text or ""), language, metadata))

    images = ("image",) if options.content == "images" else ()
    corpus_ds, _ = load_config(repo, f"{corpus_language}-corpus", split, commit, images=images)
    where = f"{repo}@{commit} {corpus_language}-corpus"
    has_text = "text" in corpus_ds.column_names
    if options.content == "markdown" and not has_text:
        raise UsageError(
            f"benchmark {decl.name}: {where} has page images but no page text",
            "use --content images (or a repo with a corpus text column)",
        )
    columns = ["id", *(["text"] if has_text else []), *images]
    require_columns(corpus_ds, where, tuple(columns))
    corpus = corpus_ds.select_columns(columns).to_dict()
    pages = [
        Page(
            str(pid),
            str(corpus["text"][index] or "") if has_text else "",
            image=image_bytes(corpus["image"][index], f"{where} page {pid}") if images else None,
        )
        for index, pid in enumerate(corpus["id"])
    ]
    return Subset(
        benchmark=decl.name,
        name=name,
        native_language=decl.subset(name).native_language,
        pages=pages,
        queries=queries,
        qrels=qrels,
        source=hub_provenance(
            decl,
            source,
            repo,
            commit,
            [f"{corpus_language}-corpus"]
            + [f"{lang}-{part}" for lang in decl.query_languages for part in ("queries", "qrels")],
            f"{repo}@{commit}",
            split=split,
        ),
    )

"""MIRACL-VISION layout (`nvidia/miracl-vision`): configs `corpus-{l}`, `images-{l}`, `queries-{l}`,
`qrels-{l}`, split `default`, one subset per language.

The qrels carry judged negatives (score 0): only score > 0 is kept, and queries left without a
relevant page are dropped (as mteb does; `source` counts them), so no paid embedding is spent on an unscored query.
Each page keeps its article `title`; page images are joined by corpus `image_id` <-> images
`file_name`, never by row position.
"""

from __future__ import annotations

from ..base.data import Page, Query, Subset
from ..base.errors import DataError
from ..base.registry import LOADERS
from .declaration import BenchmarkDeclaration, LoadOptions
from .hub import check_content, hub_provenance, image_bytes, load_config, pinned_source, require_columns
from .vidore import read_qrels, relevant_pages


@LOADERS.register(
    "miracl-vision", description="MIRACL-VISION Hub layout: corpus-{code}, queries-{code}, qrels-{code}, images"
)
def load(decl: BenchmarkDeclaration, name: str, options: LoadOptions) -> Subset:
    check_content(decl, options)
    source, repo, revision = pinned_source(decl, name, options)
    split = str(source.get("split", "default"))
    code = str(source.get("config_language") or name)
    language = decl.subset(name).native_language

    qrels_ds, commit = load_config(repo, f"qrels-{code}", split, revision)
    where = f"{repo}@{commit}"
    judged = read_qrels(qrels_ds, f"{where} qrels-{code}", "query-id", "corpus-id")
    qrels = {qid: {pid: s for pid, s in docs.items() if s > 0} for qid, docs in judged.items()}
    qrels = {qid: docs for qid, docs in qrels.items() if docs}

    queries_ds, _ = load_config(repo, f"queries-{code}", split, commit)
    require_columns(queries_ds, f"{where} queries-{code}", ("_id", "text"))
    rows = queries_ds.select_columns(["_id", "text"]).to_dict()
    all_queries = [(str(qid), str(text or "")) for qid, text in zip(rows["_id"], rows["text"])]
    queries = [
        Query(qid, text, language, {"relevant_pages": relevant_pages(qrels, qid)})
        for qid, text in all_queries
        if qid in qrels
    ]
    known = {qid for qid, _ in all_queries}
    unknown = [qid for qid in qrels if qid not in known]
    qrels = {qid: docs for qid, docs in qrels.items() if qid in known}

    corpus_ds, _ = load_config(repo, f"corpus-{code}", split, commit)
    require_columns(corpus_ds, f"{where} corpus-{code}", ("_id", "title", "text", "image_id"))
    corpus = corpus_ds.select_columns(["_id", "title", "text", "image_id"]).to_dict()
    images: dict[str, bytes] = {}
    if options.content == "images":
        images_ds, _ = load_config(repo, f"images-{code}", split, commit, images=("image",))
        require_columns(images_ds, f"{where} images-{code}", ("file_name", "image"))
        table = images_ds.select_columns(["file_name", "image"]).to_dict()
        images = {
            str(name_): image_bytes(cell, f"{where} images-{code} {name_}")
            for name_, cell in zip(table["file_name"], table["image"])
        }
    pages = []
    for index, pid in enumerate(corpus["_id"]):
        image_id = str(corpus["image_id"][index])
        image = None
        if options.content == "images":
            image = images.get(image_id)
            if image is None:
                raise DataError(
                    f"{where} corpus-{code}: page {pid} names image {image_id}, absent from images-{code}",
                    "pick another revision or report the broken page upstream",
                )
        title = corpus["title"][index]
        pages.append(
            Page(
                str(pid),
                str(corpus["text"][index] or ""),
                image=image,
                title=str(title) if title else None,
                metadata={"image_id": image_id},
            )
        )

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
            [f"{part}-{code}" for part in ("corpus", "queries", "qrels")] + ([f"images-{code}"] if images else []),
            where,
            split=split,
            queries_without_positive=len(all_queries) - len(queries),
            qrels_of_unknown_queries=len(unknown),
        ),
    )

"""Loader for the rcp-ndcg ViDoRe v3 release (`vidore-v3-rcp`): float gains, judged pools, views.

Views (declaration field `view`, overridden by `LoadOptions.view`):
- `reranking` (default): `subset.pools` holds each query's judged 150-page pool from
  `{subset}-top_ranked`; the runner ranks only the pool, as every published reranker did.
- `retrieval`: the open corpus; pages outside the pool have no gain, so they count 0. Scores
  of this view are pooled-judgment scores: compare them only with each other.
Content: `markdown` is the OCR text view (the page text the judge read), `images` the page images.
Tables are read through the release's card (`benchmarks/rcp_release.py`): the six languages of a domain share
one corpus; `--revision` takes a full sha or a tag from the release's `provenance/releases.json`.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..base.data import Page, Query, Subset
from ..base.errors import DataError, UsageError, choices
from ..base.registry import LOADERS
from .declaration import BenchmarkDeclaration, LoadOptions
from .rcp_release import REPO, Release, split_subset
from .rcp_tables import read_pools, read_qrels

VIEWS = ("reranking", "retrieval")
CONTENTS = ("markdown", "images")


def _view(decl: BenchmarkDeclaration, options: LoadOptions) -> str:
    view = options.view or decl.extra.get("view") or "reranking"
    if view not in VIEWS:
        raise UsageError(f"benchmark {decl.name}: unknown view '{view}'", f"choose from {choices(VIEWS)}")
    return view


def release_for(decl: BenchmarkDeclaration, name: str, options: LoadOptions) -> Release:
    source = decl.subset_source(name)
    revision = options.revision or source.get("revision")
    snapshot = source.get("snapshot") or os.environ.get("EVALS_REPRO_RCP_SNAPSHOT")
    return Release(
        repo=source.get("repo", REPO),
        revision=revision,
        snapshot=Path(str(snapshot)).expanduser() if snapshot else None,
    )


def _image_bytes(cell) -> bytes | None:
    if isinstance(cell, dict):
        cell = cell.get("bytes")
    return bytes(cell) if isinstance(cell, (bytes, bytearray)) else None


@LOADERS.register(
    "rcp", description="the rcp-ndcg-vidore-v3 release: {domain}__{language} subsets with float gains and judged pools"
)
def load(decl: BenchmarkDeclaration, name: str, options: LoadOptions) -> Subset:
    domain, language = split_subset(name)
    if options.content not in CONTENTS:
        raise UsageError(
            f"benchmark {decl.name}: unknown --content {options.content}", f"choose from {choices(CONTENTS)}"
        )
    view = _view(decl, options)
    release = release_for(decl, name, options)
    text_column = "text" if options.content == "markdown" else None
    wanted, also = (("id", "text"), ()) if text_column else (("id", "image"), ("text",))
    corpus = release.subset_table(name, "corpus", wanted, also)
    queries_raw = release.subset_table(name, "queries", ("id", "text"), ("language",))
    judged = read_qrels(release, name)
    pools = read_pools(release, name)
    images = corpus.get("image") if options.content == "images" else None
    texts = corpus.get("text") or [""] * len(corpus["id"])
    pages = [
        Page(
            id=str(pid),
            text=str(text or ""),
            image=_image_bytes(images[i]) if images else None,
            metadata={"domain": domain},
        )
        for i, (pid, text) in enumerate(zip(corpus["id"], texts))
    ]
    if images is not None:
        missing = [p.id for p in pages if p.image is None]
        if missing:
            raise DataError(
                f"{release.label} {name}-corpus: {len(missing)} pages without image bytes, first {missing[0]}",
                "use --content markdown (the OCR text view)",
            )
    languages = queries_raw.get("language") or [language] * len(queries_raw["id"])
    queries = [
        Query(id=str(qid), text=str(text), language=str(lang or language), metadata={"domain": domain})
        for qid, text, lang in zip(queries_raw["id"], queries_raw["text"], languages)
    ]
    known = {q.id for q in queries}
    unknown = sorted(q for q in pools if q not in known)
    if unknown:
        raise DataError(
            f"{release.label} {name}-top_ranked: {len(unknown)} pools of unknown queries, first {unknown[0]}",
            "pick another revision of the release",
        )
    return Subset(
        benchmark=decl.name,
        name=name,
        native_language=language,
        pages=pages,
        queries=queries,
        qrels=judged.qrels,
        gains=judged.gains,
        pools=pools if view == "reranking" else None,
        source={
            "kind": "rcp",
            "repo": release.repo,
            "revision": release.revision,
            "view": view,
            "content": options.content,
            "domain": domain,
            "domain_native_language": decl.extra.get("native", {}).get(domain),
            "origin": str(release.snapshot) if release.snapshot else release.label,
        },
    )

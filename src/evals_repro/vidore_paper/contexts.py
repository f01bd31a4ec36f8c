"""The pages a generator sees, per query: from a retrieval pipeline, the annotated pages, or none.

- `text` / `images`: the top k of `--retriever`, shown as markdown / as page images;
- `hybrid`: the top k of `--image-retriever` as images, then the top k of `--text-retriever` as text,
  duplicates kept (a page may be shown both ways);
- oracle: the query's relevant pages (grade descending), shown as the context asks;
- none: no page (the easy/hard panel).

The image stream retrieves over page images when every first stage of its method can (e.g.
`voyage-multimodal-3.5`, `cohere-embed-v4.0`, `mixedbread-images`), else over markdown; the text stream
always over markdown. Contexts are computed once per domain and frozen in the run directory, so a
resumed run (or a changed retriever cache) never changes what was asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..base.data import Page
from ..base.errors import UsageError
from ..base.io import atomic_write_json
from ..base.usage import Usage
from .annotations import PaperSubset
from .pipeline import KIND, Pipeline, spec_of
from .render import Part, page_parts


def compute_contexts(
    paper: PaperSubset, pipeline: Pipeline, cache_dir: Path, options: dict[str, Any], usage: Usage
) -> dict[str, list[list[Any]]]:
    """query id -> [[page id, kind, stream, rank], ...] in the order the generator sees them."""
    from ..base.context import MethodContext
    from ..metrics.ranking import trec_ranked

    if pipeline.none:
        return {q.id: [] for q in paper.queries}
    if pipeline.oracle:
        kinds = ["image", "text"] if pipeline.context == "hybrid" else [KIND[pipeline.context]]
        return {
            q.id: [[p, kind, "oracle", rank] for kind in kinds for rank, p in enumerate(paper.relevant_pages(q.id), 1)]
            for q in paper.queries
        }
    out: dict[str, list[list[Any]]] = {q.id: [] for q in paper.queries}
    for kind, method in pipeline.streams():
        spec = spec_of(method, kind)
        ctx = MethodContext(
            benchmark=paper.subset.benchmark, cache_dir=Path(cache_dir), content=spec.content, options=dict(options)
        )
        retriever = spec.build(ctx)
        run = retriever.run(paper.subset, paper.queries, pipeline.top_k)
        usage.merge(ctx.usage)
        for query in paper.queries:
            top = trec_ranked(run.get(query.id, {}), pipeline.top_k)
            out[query.id].extend([page_id, kind, kind, rank] for rank, (page_id, _) in enumerate(top, 1))
    return out


def context_parts(items: list[list[Any]], pages: Mapping[str, Page]) -> list[Part]:
    parts: list[Part] = []
    for position, (page_id, kind, _stream, _rank) in enumerate(items, 1):
        parts.extend(page_parts(pages[page_id], kind, f"Page {position} ({kind})"))
    return parts


def frozen_contexts(
    path: Path,
    identity: dict[str, Any],
    compute,
) -> tuple[dict[str, list[list[Any]]], bool]:
    """The contexts stored at `path` when they were computed for `identity`, else computed and stored."""
    import json

    if path.exists():
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored.get("identity") == identity:
            return stored["queries"], True
        raise UsageError(
            f"{path} holds contexts computed for other inputs ({stored.get('identity')})",
            "pick a new --run-name (results from different inputs must not mix)",
        )
    queries = compute()
    atomic_write_json(path, {"identity": identity, "queries": queries})
    return queries, False

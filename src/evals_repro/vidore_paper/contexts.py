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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.data import Page
from ..base.errors import UsageError
from ..base.io import atomic_write_json
from ..base.usage import Usage
from .annotations import PaperSubset
from .render import Part, page_parts

if TYPE_CHECKING:
    from ..methods.pipeline import PipelineSpec

CONTEXTS = ("text", "images", "hybrid")
KIND = {"text": "text", "images": "image"}


@dataclass(frozen=True)
class Pipeline:
    context: str = "text"  # text | images | hybrid
    retriever: str | None = None  # text / images contexts
    image_retriever: str | None = None  # hybrid
    text_retriever: str | None = None  # hybrid
    oracle: bool = False
    none: bool = False  # no context at all
    top_k: int = 5

    def streams(self) -> list[tuple[str, str]]:
        """(kind, method) per stream, in the order shown: image stream first in hybrid."""
        if self.context == "hybrid":
            return [("image", self.image_retriever or ""), ("text", self.text_retriever or "")]
        return [(KIND[self.context], self.retriever or "")]

    @property
    def needs_images(self) -> bool:
        return not self.none and self.context in ("images", "hybrid")

    @property
    def label(self) -> str:
        if self.none:
            return "no-context"
        source = "oracle" if self.oracle else "+".join(method for _, method in self.streams())
        return f"{self.context}__{source}" + ("" if self.oracle or self.top_k == 5 else f"@{self.top_k}")

    def describe(self) -> dict[str, Any]:
        if self.none:
            return {"context": "none"}
        return {
            "context": self.context,
            "source": "oracle" if self.oracle else "retrieval",
            "streams": [] if self.oracle else [{"kind": k, "method": m} for k, m in self.streams()],
            "top_k": None if self.oracle else self.top_k,
        }

    def key_variables(self) -> list[str]:
        """The API keys the retrieval streams need (first stages and rerankers), checked before any work."""
        needed: list[str] = []
        for kind, method in [] if self.none or self.oracle else self.streams():
            needed += [k for k in spec_of(method, kind).key_envs() if k not in needed]
        return needed

    def validate(self) -> None:
        if self.none:
            return
        if self.context not in CONTEXTS:
            raise UsageError(f"--context {self.context} is not valid", f"choose from {', '.join(CONTEXTS)}")
        if self.top_k < 1:
            raise UsageError(f"--top-k {self.top_k} must be at least 1", "the paper uses 5")
        if self.oracle:
            if self.retriever or self.image_retriever or self.text_retriever:
                raise UsageError("--oracle takes no retriever", "drop --retriever/--image-retriever/--text-retriever")
            return
        if self.context == "hybrid":
            if not (self.image_retriever and self.text_retriever) or self.retriever:
                raise UsageError(
                    "--context hybrid needs --image-retriever and --text-retriever (not --retriever)",
                    "e.g. --image-retriever voyage-multimodal-3.5 --text-retriever bm25",
                )
        elif not self.retriever or self.image_retriever or self.text_retriever:
            raise UsageError(
                f"--context {self.context} needs --retriever (or --oracle)",
                "e.g. --retriever bm25; --image-retriever/--text-retriever are for --context hybrid",
            )
        for kind, method in self.streams():
            spec_of(method, kind)


def spec_of(method: str, kind: str) -> PipelineSpec:
    """A stream's pipeline: the image stream retrieves over page images when all its first stages can."""
    from ..methods.pipeline import PipelineSpec, first_stage_entry

    spec = PipelineSpec.parse(method)
    from ..methods.plugins import accepted_contents

    entries = [first_stage_entry(name) for name in spec.first_stage]
    accepted = [None if e is None else (accepted_contents(e) or e.contents) for e in entries]
    if kind == "image" and all(a is not None and "images" in a for a in accepted):
        return PipelineSpec.parse(method, "images")
    return spec


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

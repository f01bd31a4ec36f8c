"""What ViDoRe v3's paper evaluations need beyond retrieval: gold answers and annotators' boxes.

Read from the same raw repo and commit the subset was loaded from (`vidore/vidore_v3_<domain>`):
- queries `answer` (string): the verified final answer;
- qrels `bounding_boxes` (list of {annotator, x1, x2, y1, y2}, int64, page-image pixels) and
  `content_type` (list of strings): the modality of each box, in the same order. A row whose
  `content_type` does not list one modality per box keeps its boxes with modality "unspecified"
  and is counted (`unaligned_modality_rows`), never guessed.

Some annotators' boxes reach past their page image (negative or too large coordinates). Pixels off
the page do not exist, so `clip_to_pages` cuts every box to its page image before anything is
compared, and counts the boxes it cut (and those left empty, drawn wholly off the page).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from ..base.data import Query, Subset
from ..base.errors import DataError, UsageError
from ..benchmarks import LoadOptions, load_subset
from ..benchmarks.declaration import BenchmarkDeclaration
from ..benchmarks.hub import image_bytes, load_config, require_columns
from .zones import Box

UNSPECIFIED = "unspecified"


@dataclass(frozen=True)
class AnnotatedBox:
    annotator: str
    box: Box
    modality: str


@dataclass
class PaperSubset:
    """A loaded subset plus, per query id, the gold answer and, per page, every annotated box."""

    subset: Subset
    answers: dict[str, str]
    boxes: dict[str, dict[str, list[AnnotatedBox]]]
    unaligned_modality_rows: int = 0
    language: str = ""
    queries: list[Query] = field(default_factory=list)  # the evaluated language's queries
    page_sizes: dict[str, tuple[int, int]] = field(default_factory=dict)  # page id -> (width, height)

    @property
    def name(self) -> str:
        return self.subset.name

    def zones(self, query_id: str, page_id: str, modality: str | None = None) -> dict[str, list[Box]]:
        """Each annotator's boxes on one page (only those of `modality` when given)."""
        out: dict[str, list[Box]] = {}
        for item in self.boxes.get(query_id, {}).get(page_id, []):
            if modality is None or item.modality == modality:
                out.setdefault(item.annotator, []).append(item.box)
        return out

    def relevant_pages(self, query_id: str) -> list[str]:
        """The query's judged relevant pages: grade descending, then page id as a number."""
        judged = self.subset.qrels.get(query_id, {})
        return sorted((p for p, g in judged.items() if g > 0), key=lambda p: (-judged[p], _numeric(p)))


def _numeric(text: str) -> tuple[int, str]:
    return (int(text), text) if text.isdigit() else (1 << 62, text)


def check_paper_benchmark(decl: BenchmarkDeclaration) -> None:
    if decl.loader != "vidore-raw":
        raise UsageError(
            f"benchmark {decl.name} has no answers or bounding boxes (loader {decl.loader})",
            "use -b vidore-v3 (the raw vidore/vidore_v3_<domain> repos)",
        )


def load_paper_subset(
    decl: BenchmarkDeclaration, name: str, options: LoadOptions, language: str | None = None
) -> PaperSubset:
    """Load subset `name` and its answers and boxes; `language` (default: native) picks the queries.

    Each question exists once per language with the same qrels rows, so agreement and grounding use
    one language's copies: the subset's native language unless told otherwise.
    """
    check_paper_benchmark(decl)
    subset = load_subset(decl, name, options)
    repo, commit = subset.source["repo"], subset.source["revision"]
    split = subset.source.get("split", "test")
    where = f"{repo}@{commit}"
    language = language or subset.native_language
    queries = [q for q in subset.queries if q.language == language]
    if not queries:
        raise UsageError(
            f"{decl.name}/{name} has no {language} queries",
            f"choose from {', '.join(sorted(subset.languages))}",
        )
    wanted = {q.id for q in queries}

    queries_ds, _ = load_config(repo, "queries", split, commit)
    require_columns(queries_ds, f"{where} queries", ("query_id", "answer"))
    rows = queries_ds.select_columns(["query_id", "answer"]).to_dict()
    answers = {str(q): str(a or "") for q, a in zip(rows["query_id"], rows["answer"]) if str(q) in wanted}

    qrels_ds, _ = load_config(repo, "qrels", split, commit)
    require_columns(qrels_ds, f"{where} qrels", ("query_id", "corpus_id", "bounding_boxes", "content_type"))
    rows = qrels_ds.select_columns(["query_id", "corpus_id", "bounding_boxes", "content_type"]).to_dict()
    boxes: dict[str, dict[str, list[AnnotatedBox]]] = {}
    unaligned = 0
    for qid, pid, raw_boxes, modalities in zip(
        rows["query_id"], rows["corpus_id"], rows["bounding_boxes"], rows["content_type"]
    ):
        query_id, page_id = str(qid), str(pid)
        if query_id not in wanted:
            continue
        raw_boxes, modalities = raw_boxes or [], modalities or []
        aligned = len(modalities) == len(raw_boxes)
        if raw_boxes and not aligned:
            unaligned += 1
        page = boxes.setdefault(query_id, {}).setdefault(page_id, [])
        for index, raw in enumerate(raw_boxes):
            try:
                box = Box.of(raw["x1"], raw["x2"], raw["y1"], raw["y2"])
                annotator = str(raw["annotator"])
            except (KeyError, TypeError):
                raise DataError(
                    f"{where} qrels: query {query_id} page {page_id} has a box without annotator/x1/x2/y1/y2: {raw}",
                    "the layout does not match ViDoRe v3's; check --revision",
                ) from None
            modality = str(modalities[index]) if aligned else UNSPECIFIED
            page.append(AnnotatedBox(annotator, box, modality))
    return PaperSubset(subset, answers, boxes, unaligned, language, queries)


@dataclass(frozen=True)
class BoxCuts:
    """What `clip_to_pages` did to the annotators' boxes of the evaluated queries."""

    boxes: int  # every annotated box
    cut: int  # boxes that reached past their page image (any edge: left/top below 0 too)
    emptied: int  # of those, boxes drawn wholly off the page (nothing left)

    def as_record(self) -> dict[str, int]:
        return {"boxes": self.boxes, "cut": self.cut, "emptied": self.emptied}


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) of an encoded image, read from its header."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.size


def page_image_sizes(paper: PaperSubset, page_ids: set[str]) -> dict[str, tuple[int, int]]:
    """Sizes of the page images of `page_ids`: from the loaded images, else read from the corpus
    config's image headers (the same repo and commit), so a text-only load pays no image decode."""
    loaded = {p.id: p.image for p in paper.subset.pages if p.id in page_ids and p.image}
    sizes = {page_id: image_size(data) for page_id, data in loaded.items()}
    wanted = page_ids - set(sizes)
    if not wanted:
        return sizes
    repo, commit = paper.subset.source["repo"], paper.subset.source["revision"]
    split = paper.subset.source.get("split", "test")
    corpus, _ = load_config(repo, "corpus", split, commit, images=("image",))
    where = f"{repo}@{commit} corpus"
    require_columns(corpus, where, ("corpus_id", "image"))
    ids = [str(i) for i in corpus.select_columns(["corpus_id"]).to_dict()["corpus_id"]]
    rows = [index for index, page_id in enumerate(ids) if page_id in wanted]
    position = 0  # a batch at a time: only image headers are read, never a domain's images at once
    for batch in corpus.select(rows).select_columns(["image"]).iter(batch_size=64):
        for value in batch["image"]:
            page_id = ids[rows[position]]
            sizes[page_id] = image_size(image_bytes(value, f"{where} page {page_id}"))
            position += 1
    return sizes


def clip_to_pages(paper: PaperSubset) -> BoxCuts:
    """Cut every annotated box of `paper` to its page image (in place); count what was cut."""
    page_ids = {page_id for pages in paper.boxes.values() for page_id, items in pages.items() if items}
    paper.page_sizes.update(page_image_sizes(paper, page_ids - set(paper.page_sizes)))
    missing = sorted(page_ids - set(paper.page_sizes))
    if missing:
        raise DataError(
            f"{paper.subset.source.get('repo')} qrels: boxes on page(s) {', '.join(missing[:5])} absent from the corpus",
            "the qrels and corpus configs do not match; check --revision",
        )
    total = cut = emptied = 0
    for pages in paper.boxes.values():
        for page_id, items in pages.items():
            size = paper.page_sizes.get(page_id)
            for index, item in enumerate(items):
                total += 1
                if size is None or not item.box.outside(size):
                    continue
                clipped = item.box.clip(size)
                cut += 1
                emptied += clipped.area == 0 and item.box.area > 0
                items[index] = AnnotatedBox(item.annotator, clipped, item.modality)
    return BoxCuts(total, cut, emptied)

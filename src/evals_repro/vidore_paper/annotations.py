"""What ViDoRe v3's paper evaluations need beyond retrieval: gold answers and annotators' boxes.

Read from the same raw repo and commit the subset was loaded from (`vidore/vidore_v3_<domain>`):
- queries `answer` (string): the verified final answer;
- qrels `bounding_boxes` (list of {annotator, x1, x2, y1, y2}, int64, page-image pixels) and
  `content_type` (list of strings): the modality of each box, in the same order. A row whose
  `content_type` does not list one modality per box keeps its boxes with modality "unspecified"
  and is counted (`unaligned_modality_rows`), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..benchmarks import LoadOptions, load_subset
from ..benchmarks.declaration import BenchmarkDeclaration
from ..benchmarks.hub import load_config, require_columns
from ..data import Query, Subset
from ..errors import DataError, UsageError
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

"""The data every stage shares: a benchmark `Subset` (pages, queries, qrels) and a `Run`.

Ids are strings everywhere (raw integer ids are converted on load) because rankings are
tie-broken by id descending as a string comparison, exactly as trec_eval does.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .errors import DataError

# Query metadata fields every loader writes under these names (when the source has them), read by
# `report --by`: query_type (a list: a query can be of several types), query_format, content_type,
# relevant_pages (the number of relevant pages).
QUERY_METADATA_FIELDS = ("query_type", "query_format", "content_type", "relevant_pages")

# qid -> docid -> score: the pytrec_eval shape, used for runs, qrels and gains alike.
Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]
Gains = dict[str, dict[str, float]]
# qid -> subtopic (nugget) -> docid -> judgment (>0: the document covers the subtopic); ndeval's qrels.
SubtopicQrels = dict[str, dict[str, dict[str, int]]]


@dataclass(frozen=True)
class Page:
    """One corpus page. `image` is encoded image bytes (PNG/JPEG/WEBP) or None.

    `title` is shown next to the page by every method when the benchmark has titles
    (MIRACL-VISION); `metadata` keeps anything else the source provides (doc id, page number).
    """

    id: str
    text: str
    image: bytes | None = None
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Query:
    """One query in one language. `metadata` holds source fields such as query_types,
    query_format, content_type; report breakdowns read them."""

    id: str
    text: str
    language: str
    metadata: dict[str, Any] = field(default_factory=dict)
    # An instruction that narrows the need (FollowIR): first stages retrieve with `text` alone,
    # rerankers read text and instruction together.
    instruction: str | None = None

    @property
    def reranker_text(self) -> str:
        """What a reranker reads: the query, then its instruction (mteb's `text + " " + instruction`)."""
        return f"{self.text} {self.instruction}" if self.instruction else self.text


@runtime_checkable
class StoredPages(Protocol):
    """A corpus kept on disk (`pagestore.PageStore`): a read-only sequence of pages that answers by id and
    knows the facts recorded when it was written, so a corpus of millions of pages is never walked twice."""

    @property
    def fingerprint(self) -> str: ...
    @property
    def duplicate_ids(self) -> list[str]: ...
    @property
    def empty_ids(self) -> list[str]: ...
    @property
    def n_empty(self) -> int: ...
    def by_id(self) -> Mapping[str, Page]: ...
    def missing(self, page_ids: Iterable[str]) -> list[str]: ...
    def __len__(self) -> int: ...
    def __contains__(self, page_id: object) -> bool: ...


@dataclass
class Subset:
    """One evaluable unit of a benchmark: a corpus, its queries in every language, and qrels.

    `qrels` hold graded integer judgments (>0 relevant); `gains` optional float gains
    (RCP-nDCG). `source` records where the data came from (repo, revision, files) so
    result files can pin it. `subtopics` holds nugget judgments for the diversity measures
    (FreshStack); `changed_docs` maps a base query id to the documents whose judgment its
    changed instruction flipped (FollowIR's `qrel_diff`, read by p-MRR).
    """

    benchmark: str
    name: str
    native_language: str
    # A list, or `StoredPages` (`pagestore.PageStore`, a read-only Sequence[Page] on disk) for corpora too
    # large for Page objects (MS MARCO); the store knows its fingerprint and its check facts.
    pages: Sequence[Page]
    queries: list[Query]
    qrels: Qrels
    gains: Gains | None = None
    source: dict[str, Any] = field(default_factory=dict)
    # Optional per-query candidate pools (reranking views): qid -> ordered page ids.
    pools: dict[str, list[str]] | None = None
    subtopics: SubtopicQrels | None = None
    changed_docs: dict[str, list[str]] | None = None

    @property
    def languages(self) -> list[str]:
        seen: dict[str, None] = {}
        for query in self.queries:
            seen.setdefault(query.language, None)
        return list(seen)

    def queries_in(self, languages: list[str] | None) -> list[Query]:
        if languages is None:
            return list(self.queries)
        wanted = set(languages)
        return [q for q in self.queries if q.language in wanted]

    def page_by_id(self) -> Mapping[str, Page]:
        if isinstance(self.pages, StoredPages):
            return self.pages.by_id()
        return {page.id: page for page in self.pages}

    def fingerprint(self, with_images: bool = False) -> str:
        """Digest of the corpus content: changes whenever a page id, text or title changes."""
        if isinstance(self.pages, StoredPages):
            return self.pages.fingerprint  # the same digest, computed once when the store was written
        digest = hashlib.sha256()
        for page in self.pages:
            digest.update(page.id.encode())
            digest.update(b"\0")
            digest.update((page.title or "").encode())
            digest.update(b"\0")
            digest.update(page.text.encode())
            digest.update(b"\1")
            if with_images and page.image is not None:
                digest.update(hashlib.sha256(page.image).digest())
        return digest.hexdigest()

    def digests(self) -> dict[str, str | None]:
        """sha256 of each part the scores depend on, and `combined` (= `data_digest()`).

        Query metadata is left out (it labels queries for reports, it does not change a score);
        the instruction is in, since rerankers read it.
        """
        queries = hashlib.sha256()
        for query in self.queries:
            parts = [query.id, query.text, query.language] + ([query.instruction] if query.instruction else [])
            queries.update(json.dumps(parts).encode())

        def digest(obj: Any) -> str | None:
            return None if obj is None else hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()

        return {
            "corpus": self.fingerprint(),
            "queries": queries.hexdigest(),
            "qrels": digest(self.qrels),
            "gains": digest(self.gains),
            "pools": digest(self.pools),
            **({"subtopics": digest(self.subtopics)} if self.subtopics is not None else {}),
            **({"changed_docs": digest(self.changed_docs)} if self.changed_docs is not None else {}),
            "combined": self.data_digest(),
        }

    def data_digest(self) -> str:
        """Digest of corpus, queries and qrels (and gains, pools, nugget judgments and changed documents
        where present): what a result or a study was computed on."""
        digest = hashlib.sha256(self.fingerprint().encode())
        for query in self.queries:
            parts = [query.id, query.text, query.language] + ([query.instruction] if query.instruction else [])
            digest.update(json.dumps(parts).encode())
        digest.update(json.dumps(self.qrels, sort_keys=True).encode())
        if self.gains is not None:
            digest.update(json.dumps(self.gains, sort_keys=True).encode())
        if self.pools is not None:
            digest.update(json.dumps(self.pools, sort_keys=True).encode())
        for extra in (self.subtopics, self.changed_docs):
            if extra is not None:
                digest.update(json.dumps(extra, sort_keys=True).encode())
        return digest.hexdigest()


@dataclass
class CheckResult:
    """Counts of each consistency problem, with the first offending ids."""

    subset: str
    problems: dict[str, list[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    FATAL = (
        "duplicate_page_ids",
        "duplicate_query_ids",
        "qrels_unknown_query",
        "qrels_unknown_page",
        "no_queries",
        "no_pages",
        "invalid_gain",
    )

    def add(self, kind: str, ids: list[str]) -> None:
        if ids:
            self.counts[kind] = len(ids)
            self.problems[kind] = ids[:5]

    @property
    def fatal(self) -> dict[str, list[str]]:
        return {k: v for k, v in self.problems.items() if k in self.FATAL}

    @property
    def warnings(self) -> dict[str, list[str]]:
        return {k: v for k, v in self.problems.items() if k not in self.FATAL}


def _duplicates(ids: list[str]) -> list[str]:
    seen: set[str] = set()
    dups: list[str] = []
    for item in ids:
        if item in seen and item not in dups:
            dups.append(item)
        seen.add(item)
    return dups


def check_subset(subset: Subset, origin: str = "") -> CheckResult:
    """Consistency checks; raises DataError on fatal problems, returns the warnings.

    Fatal: duplicate ids, qrels naming unknown queries or pages, an empty corpus or query set,
    negative/non-finite gains. Warnings: queries without a positive qrel (they are not
    scored, as in trec_eval), pages with empty text and no image (kept in the corpus).
    """
    result = CheckResult(subset.name)
    store = subset.pages if isinstance(subset.pages, StoredPages) else None
    page_ids = [] if store is not None else [p.id for p in subset.pages]
    query_ids = [q.id for q in subset.queries]
    result.add("no_pages", ["<corpus>"] if not len(subset.pages) else [])
    result.add("no_queries", ["<queries>"] if not query_ids else [])
    result.add("duplicate_page_ids", store.duplicate_ids if store is not None else _duplicates(page_ids))
    result.add("duplicate_query_ids", _duplicates(query_ids))
    known_pages: Any = store if store is not None else set(page_ids)
    known_queries = set(query_ids)
    result.add("qrels_unknown_query", sorted(q for q in subset.qrels if q not in known_queries))
    result.add(
        "qrels_unknown_page",
        sorted({d for docs in subset.qrels.values() for d in docs if d not in known_pages}),
    )
    positive = {q for q, docs in subset.qrels.items() if any(s > 0 for s in docs.values())}
    result.add("queries_without_positive_qrel", [q for q in query_ids if q not in positive])
    if store is not None:  # facts recorded when the store was written (ids of the first 1,000; text-only pages)
        result.add("empty_page_text", store.empty_ids)
        if store.n_empty:
            result.counts["empty_page_text"] = store.n_empty
    else:  # a page image is content too: only a page with neither text nor image is empty
        result.add("empty_page_text", [p.id for p in subset.pages if not p.text.strip() and p.image is None])
    if subset.gains is not None:
        bad = [
            f"{q}/{d}"
            for q, docs in subset.gains.items()
            for d, g in docs.items()
            if not (isinstance(g, (int, float)) and math.isfinite(g) and g >= 0)
        ]
        result.add("invalid_gain", bad)
    fatal = result.fatal
    if fatal:
        kind, ids = next(iter(fatal.items()))
        where = f" ({origin})" if origin else ""
        raise DataError(
            f"subset {subset.benchmark}/{subset.name}{where}: {result.counts[kind]} "
            f"{kind.replace('_', ' ')}, first: {', '.join(ids)}",
            # A Hub source has revisions to pick from; a local folder or an ir_datasets source does not.
            "fix the source data or pick another revision" if subset.source.get("revision") else "fix the source data",
        )
    return result

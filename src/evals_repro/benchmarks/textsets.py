"""What the `text` benchmark's two loaders (`beir-hub`, `ir-datasets`) share: judgments as published
(integer grades, -1 made explicitly non-relevant), the check of loaded counts against the published
ones, and the on-disk page store their corpora go to.

Counts policy. A declaration lists the published `counts` (queries, docs, judged pairs) of each
subset. A loaded subset whose counts differ gets one warning line (on stderr, and recorded under
`source.counts` in every result file): it is another revision or a local copy (a test fixture, a
trimmed corpus), and its scores do not compare with published tables. Data that is clearly broken
is an error instead: no judged query at all, a grade that is not a whole number, or judgments of
one pair that disagree; the consistency checks (`check_subset`) add unknown ids and duplicates.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.data import Qrels
from ..base.errors import DataError
from ..base.progress import progress_bar

if TYPE_CHECKING:
    from ..base.pagestore import PageStore

log = logging.getLogger(__name__)

COUNT_NAMES = ("queries", "docs", "judged")
DEFAULT_CACHE = Path("cache")


def read_judgments(rows: Iterable[tuple[Any, Any, Any]], where: str) -> tuple[Qrels, dict[str, int]]:
    """(qrels, facts) from (query id, doc id, grade) rows.

    Float grades (the mteb copies store float64) must be whole numbers and are cast to int; a
    negative grade (trec-covid's two -1 judgments) means judged non-relevant and is stored as 0,
    so no metric can read it as a (negative) gain. Facts: judged rows, negative grades.
    """
    qrels: Qrels = {}
    judged = negative = 0
    for qid, did, score in rows:
        value = float(score)
        if not math.isfinite(value) or value != int(value):
            raise DataError(
                f"{where}: grade {score!r} for query {qid}, doc {did} is not a whole number", "fix the qrels"
            )
        grade = int(value)
        if grade < 0:
            negative += 1
            grade = 0
        docs = qrels.setdefault(str(qid), {})
        if str(did) in docs and docs[str(did)] != grade:
            raise DataError(
                f"{where}: query {qid}, doc {did} is judged twice with different grades",
                "pick another revision or fix the qrels",
            )
        docs[str(did)] = grade
        judged += 1
    return qrels, {"judged_rows": judged, "negative_grades": negative}


def check_counts(label: str, published: dict[str, Any] | None, loaded: dict[str, int]) -> dict[str, Any]:
    """Compare loaded counts with the declared published ones; warn in one line when they differ."""
    if not loaded.get("queries") or not loaded.get("judged"):
        raise DataError(
            f"{label}: {loaded.get('queries', 0)} judged queries and {loaded.get('judged', 0)} judgments loaded",
            "the source is empty or its qrels do not match its queries; check the declaration and the data",
        )
    record: dict[str, Any] = {"loaded": dict(loaded)}
    if published:
        expected = {name: int(published[name]) for name in COUNT_NAMES if name in published}
        record["published"] = expected
        differing = [name for name, value in expected.items() if loaded.get(name) != value]
        record["match"] = not differing
        if differing:
            shown = ", ".join(f"{name} {loaded.get(name, 0):,} (published {expected[name]:,})" for name in differing)
            log.warning(
                f"{label}: {shown}; another revision or a local copy, scores will not compare with published tables"
            )
    return record


def corpus_store(
    description: dict[str, Any],
    cache_dir: Path | None,
    pages: Callable[[], Iterable[tuple[str, str]]],
    label: str,
    total: int | None,
) -> PageStore:
    """The corpus as a page store under `<cache>/pages/<key>/`, written on first use from `pages()`.

    `description` names the source exactly (repo and commit, or dataset and file identity): two
    subsets with one corpus (DL19, DL20) share the store, hence its fingerprint and BM25 index.
    """
    from ..base.pagestore import build_store, open_store, store_key  # NumPy: imported by a load, not by a lookup

    directory = Path(cache_dir or DEFAULT_CACHE) / "pages" / store_key(description)
    store = open_store(directory)
    if store is not None:
        return store
    with progress_bar(f"storing corpus of {label}", total) as bar:
        return build_store(directory, pages(), source=description, on_page=bar.advance)


def document_text(title: Any, body: Any) -> str:
    """BEIR's document text: `(title + " " + body).strip()` (beir's reranker, mteb, ir_datasets)."""
    return f"{title or ''} {body or ''}".strip()

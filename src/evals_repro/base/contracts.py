"""What a component of the user's own must hand back, checked the moment it hands it back.

A plugin's or Python object's retriever, embedder and reranker (methods/plugins.py, embedders/guarded.py) run
code evals-repro does not own, so what they return is checked before anything is scored, cached or written:

- `Retriever.run`: the Run mapping `{query_id: {page_id: score}}`, only queries that were asked, at most
  `top_k` pages each, every page in the subset's corpus, every score a finite number (numpy scalars such as
  `np.float32` are taken as the floats they are). A query with no pages is allowed (the runner counts it).
- `Embedder.embed`: one row per item, one width, finite, and no row that is all zeros (it cannot be
  normalised); the message says which check failed and names the items.
- `Reranker.rerank`: one finite number per document.

A violation (or an exception raised by the user's code, `raised`) is one `ComponentError` line naming the
component, the query or row and what was wrong: exit 5, and nothing is written for that subset. The checks run
on the fast paths in C (type sets, key views, sums); a closer look happens only when one of those says no.

`unchecked()` passes answers through as they are: it exists for tests/perf/test_contracts_perf.py, which times
runs with and without the checks side by side; nothing else may use it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

from .data import StoredPages
from .errors import ComponentError, EvalsError

if TYPE_CHECKING:
    import numpy as np

    from .data import Query, Run, Subset

README = 'see "Bring your own model" in the README'
RUN_SHAPE = "{query_id: {page_id: score}}"
SHOWN = 3  # ids named in one message
ROWS_SHOWN = 5  # item positions named in one message
_EXCERPT = 32  # characters of a query or item text shown

_BYPASS = {"on": False}


@contextmanager
def unchecked() -> Iterator[None]:
    """Pass every answer through unchecked inside the block (the side-by-side benchmark's other side)."""
    _BYPASS["on"] = True
    try:
        yield
    finally:
        _BYPASS["on"] = False


@contextmanager
def user_call(component: str, call: str) -> Iterator[None]:
    """Around a call into the user's code: what it raises becomes one ComponentError line (`raised`); our own
    errors raised through it (a provider's, a usage error) pass unchanged."""
    try:
        yield
    except EvalsError:
        raise
    except Exception as exc:
        raise raised(component, call, exc) from exc


def raised(component: str, call: str, exc: Exception) -> ComponentError:
    """The user's code raised inside `call` (e.g. "run()"): one line naming the component (the traceback is
    kept as the error's cause, shown with --verbose)."""
    detail = " ".join(str(exc).split())
    return ComponentError(
        f"{component}: {call} raised {type(exc).__name__}" + (f": {detail}" if detail else ""),
        "fix the component (--verbose shows its traceback)",
    )


def _kind(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def _excerpt(text: str | None) -> str:
    text = " ".join((text or "").split())
    return repr(text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…")


def _listed(values: list[Any]) -> str:
    shown = ", ".join(repr(v) for v in values[:SHOWN])
    return shown + (f" and {len(values) - SHOWN} more" if len(values) > SHOWN else "")


def _number(value: Any) -> float | None:
    """`value` as a float when it is a real number (int, float, numpy scalar), else None; bools are not scores."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return None


# -- Retriever.run --------------------------------------------------------------------------------------


def checked_run(run: Any, component: str, subset: Subset, queries: list[Query], top_k: int) -> Run:
    """`run` as a Run of plain floats; ComponentError naming the component and query when it breaks the contract."""
    if _BYPASS["on"]:
        return run
    where = f"{subset.benchmark}/{subset.name}"
    if not isinstance(run, Mapping):
        raise ComponentError(
            f"{component}: run() returned {_kind(run)}, not the Run mapping {RUN_SHAPE}",
            f"return a dict of dicts, e.g. {{'q1': {{'p3': 0.82, 'p7': 0.41}}}}, for the queries it was given ({README})",
        )
    asked = {query.id for query in queries}
    if not run.keys() <= asked:
        stray = [qid for qid in run if qid not in asked]
        raise ComponentError(
            f"{component}: run() returned {len(stray)} query id(s) that were not asked on {where}: {_listed(stray)}",
            f"return pages only for the {len(asked)} queries run() was given",
        )
    store = subset.pages if isinstance(subset.pages, StoredPages) else None  # a corpus on disk answers in bulk
    known = {page.id for page in subset.pages} if store is None else None
    checked: Run = {}
    for qid, rows in run.items():
        if not isinstance(rows, Mapping):
            raise ComponentError(
                f"{component}: run() returned {_kind(rows)} for query {qid!r}, not a mapping {{page_id: score}}",
                f"return {RUN_SHAPE} ({README})",
            )
        if len(rows) > top_k:
            raise ComponentError(
                f"{component}: run() returned {len(rows)} pages for query {qid!r}, more than the top_k of {top_k} "
                "it was given",
                "return at most top_k pages per query, the best ones",
            )
        if known is not None and not rows.keys() <= known:
            _outside(component, where, qid, [pid for pid in rows if pid not in known])
        values = rows.values()
        kinds = set(map(type, values))
        if kinds <= {float} and math.isfinite(sum(values)):
            checked[qid] = rows if type(rows) is dict else dict(rows)
            continue
        if all(issubclass(kind, numbers.Real) and kind is not bool for kind in kinds):  # numpy scores, ints
            floats = list(map(float, values))
            if math.isfinite(sum(floats)):
                checked[qid] = dict(zip(rows.keys(), floats))
                continue
        checked[qid] = {pid: _score(component, qid, pid, score) for pid, score in rows.items()}  # names the culprit
    if store is not None:  # every page id of the run looked up at once
        absent = set(store.missing(set().union(*checked.values())))
        if absent:
            qid = next(q for q, rows in checked.items() if not absent.isdisjoint(rows))
            _outside(component, where, qid, [pid for pid in checked[qid] if pid in absent])
    return checked


def _outside(component: str, where: str, qid: str, unknown: list[Any]) -> NoReturn:
    raise ComponentError(
        f"{component}: run() returned {len(unknown)} page id(s) for query {qid!r} that are not in the corpus "
        f"of {where}: {_listed(unknown)}",
        "return ids of subset.pages (Page.id)",
    )


def _score(component: str, qid: str, pid: Any, score: Any) -> float:
    number = _number(score)
    if number is None:
        raise ComponentError(
            f"{component}: run() scored page {pid!r} of query {qid!r} with {_kind(score)} ({score!r}), not a number",
            "return a float score per page (numpy floats are fine)",
        )
    if not math.isfinite(number):
        raise ComponentError(
            f"{component}: run() scored page {pid!r} of query {qid!r} {number}: scores must be finite",
            "return finite scores (NaN and ±inf cannot be ranked); leave a page out instead",
        )
    return number


# -- Reranker.rerank -------------------------------------------------------------------------------------


def checked_scores(scores: Any, documents: int, component: str, query: str) -> list[float]:
    """`scores` as plain floats, one per document; ComponentError naming the component and query otherwise."""
    if _BYPASS["on"]:
        return scores
    about = f"for the query {_excerpt(query)}"
    tolist = getattr(scores, "tolist", None)  # a numpy array (or scalar: refused below as not a sequence)
    values = tolist() if callable(tolist) else scores
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, (list, tuple)):
        raise ComponentError(
            f"{component}: rerank() returned {_kind(scores)} {about}, not a list of {documents} scores",
            "return one float per document, in the documents' order",
        )
    if len(values) != documents:
        raise ComponentError(
            f"{component}: rerank() returned {len(values)} scores for {documents} documents {about}",
            "return one float per document, in the documents' order",
        )
    numbers_ = [_number(value) for value in values]
    wrong = [i for i, number in enumerate(numbers_) if number is None or not math.isfinite(number)]
    if wrong:
        first = values[wrong[0]]
        raise ComponentError(
            f"{component}: rerank() returned {len(wrong)} score(s) that are not finite numbers {about}: "
            f"document {wrong[0]} scored {first!r}" + (f" ({_kind(first)})" if _number(first) is None else ""),
            "return a finite float per document (NaN and ±inf cannot be ranked)",
        )
    return numbers_  # type: ignore[return-value]


# -- Embedder.embed --------------------------------------------------------------------------------------


def checked_rows(result: Any, items: list[Any], input_type: str, component: str, width: int | None) -> np.ndarray:
    """`result` as a float32 matrix of one finite, non-zero row per item (`width` wide, when one is known);
    ComponentError naming the check that failed and the items otherwise."""
    import numpy as np

    if _BYPASS["on"]:
        return np.asarray(result, dtype=np.float32)
    n = len(items)
    try:
        with np.errstate(over="ignore"):  # a value past float32 becomes inf: the non-finite check names it
            matrix = np.asarray(result, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ComponentError(
            f"{component}: embed() failed the shape check: it returned {_kind(result)} that is not a matrix of "
            f"numbers ({' '.join(str(exc).split())})",
            f"return an array of shape ({n}, width): one row per item, in order",
        ) from None
    if matrix.ndim != 2 or matrix.shape[0] != n:
        raise ComponentError(
            f"{component}: embed() failed the shape check: it returned shape {matrix.shape} for {n} {input_type} items",
            f"return an array of shape ({n}, width): one row per item, in order",
        )
    if width is not None and matrix.shape[1] != width:
        raise ComponentError(
            f"{component}: embed() failed the width check: rows of width {matrix.shape[1]}, earlier rows have {width}",
            "return one width throughout a run",
        )
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        raise ComponentError(
            f"{component}: embed() failed the non-finite check: {_items(np.flatnonzero(~finite), items, input_type)} "
            "hold NaN, ±inf or values past float32",
            "return finite values",
        )
    zero = np.linalg.norm(matrix, axis=1) == 0  # what normalising divides by
    if zero.any():
        raise ComponentError(
            f"{component}: embed() failed the zero-norm check: {_items(np.flatnonzero(zero), items, input_type)} "
            "are all zeros and cannot be normalised",
            "return a non-zero vector for every item (an empty or unknown text included)",
        )
    return matrix


def _items(rows: Any, items: list[Any], input_type: str) -> str:
    """`2 of 38 document rows (items 4, 17; item 4: 'title: Heat pumps…')`: positions in the call's items."""
    positions = [int(i) for i in rows]
    shown = ", ".join(map(str, positions[:ROWS_SHOWN])) + (
        f" +{len(positions) - ROWS_SHOWN} more" if len(positions) > ROWS_SHOWN else ""
    )
    first = positions[0]
    return (
        f"{len(positions)} of {len(items)} {input_type} rows (items {shown}; item {first}: {_item_text(items[first])})"
    )


def _item_text(item: Any) -> str:
    text = getattr(item, "text", None)
    if text is None and getattr(item, "image", None) is not None:
        return "(an image)"
    return _excerpt(text)

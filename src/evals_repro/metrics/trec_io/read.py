"""Readers for TREC run files (`qid Q0 docid rank score tag`) and qrels (`qid 0 docid rel`).

As trec_eval reads them: columns are whitespace-separated; blank lines and lines starting with
`#` are skipped (a `#` inside an id is part of it); run lines may carry fields after the sixth,
which are ignored. A path `-` reads standard input; gzip files are read as such (detected by
their magic bytes). Every problem is one DataError naming `file:line`. The rank column is
ignored, as in trec_eval: the order comes from the scores.

Files are read a block of lines at a time (blocks.py: the line cap, gzip, read failures); each
block is split into columns with NumPy (columns.py) and read line by line only when it holds
something that reader must judge, so the messages are the line reader's, word for word.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ...base.errors import DataError
from .blocks import MAX_LINE_BYTES, STDIN, Block, Layout, block_lines, read_blocks, where

if TYPE_CHECKING:
    from .columns import Columns

__all__ = ["MAX_LINE_BYTES", "STDIN", "iter_columns", "read_trec_qrels", "read_trec_run", "read_trec_run_and_tag"]

RUN_LAYOUT = "`qid Q0 docid rank score tag`"
QRELS_LAYOUT = "`qid 0 docid relevance`"
RUN = Layout(
    "run",
    RUN_LAYOUT,
    6,
    extra_ok=True,
    value=4,
    integer=False,
    value_name="score",
    value_hint=f"the fifth column is the score; lines are {RUN_LAYOUT}",
    tag=5,
)
QRELS = Layout(
    "qrels",
    QRELS_LAYOUT,
    4,
    extra_ok=False,
    value=3,
    integer=True,
    value_name="relevance",
    value_hint=f"the fourth column is an integer grade; lines are {QRELS_LAYOUT}",
)
# The float gains `run` saves beside a result (`qid 0 docid gain`); `evaluate --gains` checks them further.
SAVED_GAINS = Layout(
    "gains",
    "`qid 0 docid gain`",
    4,
    extra_ok=False,
    value=3,
    integer=False,
    value_name="gain",
    value_hint="the fourth column is the gain; lines are `qid 0 docid gain`",
)

Table = dict[str, dict[str, float]]


def iter_columns(
    path: str | Path, n_columns: int, kind: str, layout: str, extra_ok: bool = False
) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) for each line that is neither blank nor a `#` comment.

    Wrong column counts (fewer than `n_columns` when `extra_ok`, whose extra fields are dropped)
    and files without a data line raise.
    """
    name = where(path)
    seen_any = False
    for block in read_blocks(path, kind, layout):
        for row in block_lines(block, name, n_columns, kind, layout, extra_ok):
            seen_any = True
            yield row
    if not seen_any:
        raise DataError(f"{name}: {kind} file is empty", f"{kind} lines are {layout}")


def _parse(text: str, convert: Callable[[str], float], where: str, what: str, hint: str):
    try:
        return convert(text)
    except ValueError:
        expected = "an integer" if convert is int else "a number"
        raise DataError(f"{where}: {what} '{text}' is not {expected}", hint) from None


def _duplicate(path, number: int, qid: str, docid: str, n_columns: int, kind: str, layout: str) -> DataError:
    """The error for a repeated (qid, docid); the first occurrence is found by re-reading the file."""
    verb = "listed" if kind == "run" else "judged"
    if str(path) == STDIN:
        at = "earlier"
    else:
        extra_ok = kind == "run"
        first = next(
            n
            for n, fields in iter_columns(path, n_columns, kind, layout, extra_ok)
            if fields[0] == qid and fields[2] == docid
        )
        at = f"first at line {first}"
    return DataError(
        f"{where(path)}:{number}: document {docid} is {verb} twice for query {qid} ({at})",
        f"keep one line per query and document; {kind} lines are {layout}",
    )


def _merge(table: Table, columns: Columns) -> bool:
    """Add a block's rows to the table; False (the table untouched) when a document repeats for a query."""
    staged: Table = {}
    bounds, docs, values = columns.bounds, columns.docs, columns.values
    for index, qid in enumerate(columns.qids):
        low, high = bounds[index], bounds[index + 1]
        new = dict(zip(docs[low:high], values[low:high]))
        if len(new) != high - low:
            return False
        before = table.get(qid)
        if before and not before.keys().isdisjoint(new):
            return False
        mine = staged.get(qid)
        if mine is None:
            staged[qid] = new
        elif mine.keys().isdisjoint(new):
            mine.update(new)
        else:
            return False
    for qid, new in staged.items():
        before = table.get(qid)
        if before is None:
            table[qid] = new
        else:
            before.update(new)
    return True


def _read_lines(table: Table, block: Block, path: str | Path, layout: Layout) -> tuple[bool, str | None]:
    """A block the line reader must judge, added row by row: (any data line, the last line's tag)."""
    name = where(path)
    kind, text = layout.kind, layout.text
    seen, tag = False, None
    convert: Callable[[str], float] = int if layout.integer else float
    for number, fields in block_lines(block, name, layout.columns, kind, text, layout.extra_ok):
        seen = True
        if layout.tag is not None:
            tag = fields[layout.tag]
        at = f"{name}:{number}"
        value = _parse(fields[layout.value], convert, at, layout.value_name, layout.value_hint)
        if not layout.integer and math.isnan(value):
            raise DataError(
                f"{at}: {layout.value_name} is NaN",
                f"every retrieved document needs a numeric {layout.value_name}; lines are {text}",
            )
        qid, docid = fields[0], fields[2]
        docs = table.setdefault(qid, {})
        if docid in docs:
            raise _duplicate(path, number, qid, docid, layout.columns, kind, text)
        docs[docid] = value
    return seen, tag


def read_table(path: str | Path, layout: Layout, empty_ok: bool = False) -> tuple[Table, str]:
    """`{qid: {docid: value}}` and the last tag of a run, qrels or gains file (see the module docstring)."""
    from .columns import split_block

    table: Table = {}
    tag, seen = "", False
    for block in read_blocks(path, layout.kind, layout.text):
        columns = split_block(block.data, layout)
        if columns is not None and _merge(table, columns):
            rows, last = len(columns.docs) > 0, columns.tag
            block.lines = columns.lines
        else:
            rows, last = _read_lines(table, block, path, layout)
        seen = seen or rows
        if last is not None:
            tag = last
    if not seen and not empty_ok:
        raise DataError(f"{where(path)}: {layout.kind} file is empty", f"{layout.kind} lines are {layout.text}")
    return table, tag


def read_trec_run(path: str | Path) -> dict[str, dict[str, float]]:
    """A TREC run as `{qid: {docid: score}}`; a docid listed twice for one query is an error."""
    return read_trec_run_and_tag(path)[0]


def read_trec_run_and_tag(path: str | Path) -> tuple[dict[str, dict[str, float]], str]:
    """The run and its tag (the sixth column of its last line: what trec_eval prints as runid)."""
    return read_table(path, RUN)


def read_trec_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """TREC qrels as `{qid: {docid: relevance}}` with integer grades; duplicates are an error."""
    return read_table(path, QRELS)[0]  # type: ignore[return-value]

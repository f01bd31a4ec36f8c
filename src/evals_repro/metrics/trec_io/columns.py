"""A block of TREC lines split into columns with NumPy, at the speed of the disk.

The line reader (blocks.block_lines) costs a Python string per field and a list per line: 23 of 30 s
of `evaluate` on a 5-million-line run. Here the bytes are split with array operations, and Python
objects are made only for what the table keeps: one string per document, one number per line, one
string per query. The result must be exactly the line reader's, so a block is taken only when
nothing in it needs that reader's judgement: every byte ASCII and no control character but
whitespace (then splitting bytes on whitespace is what `str.split()` does), every line within the
cap, every data line with the right number of columns, every value parsed by Python's `float`/`int`
rules, no NaN. For anything else `split_block` answers None and the caller reads the block line by
line, which names the first problem by `file:line`, as it always has. Numbers: numbers.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .blocks import MAX_LINE_BYTES, Layout
from .numbers import LOW_BYTES, read_floats, read_ints, words_at

# Bytes up to the space: 0 = a control character the line reader must judge (NUL, ...), 1 = whitespace to
# str.split(), 2 = the newline. (Past ASCII is the line reader's too: UTF-8, and U+0085 and U+00A0 split.)
_SEPARATOR = np.zeros(33, np.uint8)
_SEPARATOR[list(b" \t\r\x0b\x0c\x1c\x1d\x1e\x1f")] = 1
_SEPARATOR[10] = 2
# Past this many bytes a query id is not worth a fixed-width array (the line reader takes the block).
MAX_ID_BYTES = 256


@dataclass(frozen=True)
class Columns:
    """A block's data lines: rows `bounds[i]:bounds[i + 1]` belong to query `qids[i]`, in file order."""

    qids: list[str]
    bounds: list[int]
    docs: list[str]
    values: list
    tag: str | None  # the tag column of the last data line (None without one)
    lines: int  # lines in the block, data or not


@dataclass(frozen=True)
class _Fields:
    """Where each data line's query id, document id and value start and end (`ends`: the whitespace byte after
    each), and where the last line's tag does."""

    starts: tuple[np.ndarray, np.ndarray, np.ndarray]
    ends: tuple[np.ndarray, np.ndarray, np.ndarray]
    tag: tuple[int, int] | None


def _regular(data: np.ndarray, seps: np.ndarray, newline: np.ndarray, lines: int, layout: Layout) -> _Fields | None:
    """The usual block: every line holds the same number of fields, one whitespace byte apart, no comment."""
    per_line = len(seps) // lines
    if (
        per_line * lines != len(seps)
        or per_line < layout.columns
        or (per_line > layout.columns and not layout.extra_ok)
        or data[0] <= 32
        or not newline[per_line - 1 :: per_line].all()
        or not (seps[1:] - seps[:-1] > 1).all()
    ):
        return None
    line_starts = np.empty(lines, np.int64)
    line_starts[0] = 0
    line_starts[1:] = seps[per_line - 1 : -1 : per_line] + 1
    if (data[line_starts] == ord("#")).any():
        return None
    value = layout.value
    starts = (line_starts, seps[1::per_line] + 1, seps[value - 1 :: per_line] + 1)
    ends = (seps[0::per_line], seps[2::per_line], seps[value::per_line])
    tag = None
    if layout.tag is not None:
        last = len(seps) - per_line + layout.tag
        tag = (int(seps[last - 1]) + 1, int(seps[last]))
    return _Fields(starts, ends, tag)


def _general(data: np.ndarray, seps: np.ndarray, newline: np.ndarray, lines: int, layout: Layout) -> _Fields | None:
    """Any block: fields found between whitespace runs, blank and `#` lines dropped, column counts checked."""
    before = np.empty_like(seps)
    before[0] = -1
    before[1:] = seps[:-1]
    closes = seps - before > 1  # a field ends at this whitespace byte
    field_ends = seps[closes]
    field_starts = before[closes] + 1
    line_of = (np.cumsum(newline) - newline)[closes]
    per_line = np.bincount(line_of, minlength=lines)
    firsts = (np.cumsum(per_line) - per_line)[per_line > 0]
    counts = per_line[per_line > 0]
    data_lines = data[field_starts[firsts]] != ord("#")
    firsts, counts = firsts[data_lines], counts[data_lines]
    wrong = counts < layout.columns if layout.extra_ok else counts != layout.columns
    if wrong.any():
        return None
    value = firsts + layout.value
    starts = (field_starts[firsts], field_starts[firsts + 2], field_starts[value])
    ends = (field_ends[firsts], field_ends[firsts + 2], field_ends[value])
    tag = None
    if layout.tag is not None and len(firsts):
        last = int(firsts[-1]) + layout.tag
        tag = (int(field_starts[last]), int(field_ends[last]))
    return _Fields(starts, ends, tag)


def _packed(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, separator: bool) -> tuple[np.ndarray, np.ndarray]:
    """The fields' bytes back to back (each followed by a newline when `separator`), and their lengths."""
    lengths = ends - starts + separator
    offsets = np.cumsum(lengths)
    index = np.repeat(starts - (offsets - lengths), lengths)
    index += _counting(len(index))
    packed = data[index]
    if separator:
        packed[offsets - 1] = 10
    return packed, lengths


_COUNTING = np.arange(0)


def _counting(n: int) -> np.ndarray:
    """0, 1, ..., n - 1, kept between blocks rather than made anew for each."""
    global _COUNTING
    if len(_COUNTING) < n:
        _COUNTING = np.arange(max(n, 2 * len(_COUNTING)))
    return _COUNTING[:n]


def _texts(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[str]:
    """The fields as Python strings: packed with newlines, decoded once, split once."""
    packed, _ = _packed(data, starts, ends, True)
    texts = packed.tobytes().decode("ascii").split("\n")
    texts.pop()
    return texts


def _same_as_previous(block: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """For each query id after the first, is it byte for byte the one before it? None when one is too long.

    Ids are compared eight bytes at a time, each word read straight from the block (unaligned) and cut to
    the id's length. A query id has at least seven bytes of its line after it (three more fields and the
    newline), so a word read where an id still has bytes never runs past the block.
    """
    lengths = ends - starts
    width = int(lengths.max())
    if width > MAX_ID_BYTES:
        return None
    words = words_at(block)
    differ = lengths[1:] != lengths[:-1]
    for offset in range(0, width, 8):
        left = np.clip(lengths - offset, 0, 8)
        word = words[np.minimum(starts + offset, len(words) - 1)] & LOW_BYTES[left]
        differ |= word[1:] != word[:-1]
    return ~differ


def split_block(block: bytes, layout: Layout) -> Columns | None:
    """The block's data lines as columns, or None when the line reader must read it (see the module docstring)."""
    data = np.frombuffer(block, np.uint8)
    if int(data.max()) > 127:
        return None
    seps = np.flatnonzero(data <= 32)
    kinds = _SEPARATOR[data[seps]]
    if not kinds.all():
        return None
    newline = kinds == 2
    if len(block) > MAX_LINE_BYTES + 1 and int(np.diff(seps[newline], prepend=-1).max()) > MAX_LINE_BYTES + 1:
        return None
    lines = int(np.count_nonzero(newline))
    fields = _regular(data, seps, newline, lines, layout) or _general(data, seps, newline, lines, layout)
    if fields is None:
        return None
    (qid_starts, doc_starts, value_starts), (qid_ends, doc_ends, value_ends) = fields.starts, fields.ends
    rows = len(qid_starts)
    if rows == 0:
        return Columns([], [0], [], [], None, lines)
    parsed = (read_ints if layout.integer else read_floats)(block, value_starts, value_ends)
    if parsed is None:
        return None
    same = _same_as_previous(block, qid_starts, qid_ends)
    if same is None:
        return None
    bounds = [0, *(np.flatnonzero(~same) + 1).tolist(), rows]
    qids = [block[qid_starts[row] : qid_ends[row]].decode("ascii") for row in bounds[:-1]]
    docs = _texts(data, doc_starts, doc_ends)
    tag = None if fields.tag is None else block[fields.tag[0] : fields.tag[1]].decode("ascii")
    return Columns(qids, bounds, docs, parsed.tolist(), tag, lines)

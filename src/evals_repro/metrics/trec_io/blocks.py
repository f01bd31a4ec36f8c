"""A TREC file's bytes, a block of whole lines at a time, and the line-by-line reading of one block.

Both readers (the NumPy one in columns.py and the line one here) start from the same blocks, so the
checks on the bytes themselves live here once: a path `-` is standard input, gzip is detected by its
magic bytes and streamed, a line longer than `MAX_LINE_BYTES` is refused as soon as that many bytes
of it are read (a binary or a 2 GB JSON blob costs a few megabytes and a moment, not its size), and
a damaged gzip body or a failing disk is one DataError naming the file.
"""

from __future__ import annotations

import gzip
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ...base.errors import DataError

STDIN = "-"
# Far above any real TREC line (a few ids and numbers); a longer "line" means the file is something else.
MAX_LINE_BYTES = 1 << 20
# Bytes read at a time: large enough that NumPy's per-call cost vanishes, small enough that its temporaries
# stay in cache; a little under the line cap, so a block (this and an unfinished line) rarely needs measuring.
BLOCK_BYTES = MAX_LINE_BYTES - (1 << 12)
# What a damaged file raises while it is read: truncated or corrupt gzip, an I/O error.
READ_ERRORS = (OSError, EOFError, zlib.error)


@dataclass(frozen=True)
class Layout:
    """Which columns a file has and which of them a table keeps."""

    kind: str  # "run", "qrels", ...: what messages call the file
    text: str  # the layout as messages show it
    columns: int
    extra_ok: bool  # later columns are allowed and ignored (runs)
    value: int  # the column of the number: the score, the grade
    integer: bool  # the number is an integer (a grade) rather than a float (a score)
    value_name: str  # what messages call the number
    value_hint: str  # where it is, for a message about it
    tag: int | None = None  # a column whose last value is kept (a run's tag)


@dataclass
class Block:
    """Whole lines of a file: `data` ends with a newline, its first line is line `first` of the file.

    A reader that counted the block's lines sets `lines`, which spares read_blocks counting them again.
    """

    first: int
    data: bytes
    lines: int | None = None


def where(path: str | Path) -> str:
    """How messages name the file."""
    return "<stdin>" if str(path) == STDIN else str(path)


def open_input(path: str | Path, kind: str) -> IO[bytes]:
    """The file's bytes (decompressed when gzip), or standard input for `-`."""
    if str(path) == STDIN:
        return sys.stdin.buffer
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: {kind} file not found", "check the path")
    if not path.is_file():
        raise DataError(f"{path}: {kind} path is not a file", "give the path of a file")
    try:
        handle = open(path, "rb")
        gzipped = handle.peek(2)[:2] == b"\x1f\x8b"
    except OSError as exc:
        raise DataError(
            f"{path}: cannot read the {kind} file ({exc.strerror or type(exc).__name__})",
            "check the file's permissions",
        ) from None
    if gzipped:
        return gzip.GzipFile(fileobj=handle)  # type: ignore[return-value]
    return handle


def long_line(name: str, number: int, kind: str, layout: str) -> DataError:
    return DataError(
        f"{name}:{number}: line is longer than {MAX_LINE_BYTES // (1 << 20)} MiB; this does not look like a {kind} file",
        f"{kind} lines are {layout}, one per line",
    )


def read_failure(name: str, kind: str, exc: BaseException) -> DataError:
    """A damaged file, in one line: the gzip body (bad data, cut short) or the disk."""
    if isinstance(exc, (zlib.error, EOFError, gzip.BadGzipFile)):
        why = str(exc) or type(exc).__name__
        return DataError(
            f"{name}: the {kind} file is not valid gzip ({why})",
            "the file is damaged or cut short: copy or download it again, or give it uncompressed",
        )
    why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return DataError(f"{name}: cannot read the {kind} file ({why})", "check that the file is complete and readable")


def read_blocks(path: str | Path, kind: str, layout: str) -> Iterator[Block]:
    """The file as blocks of whole lines (a last line without a newline gets one).

    A line still unfinished past MAX_LINE_BYTES is refused after the lines before it were handed on,
    so an earlier problem is still the one named. Lines inside a block are the caller's to measure.
    """
    name = where(path)
    handle = open_input(path, kind)
    try:
        number = 1
        pending = b""
        while True:
            data = handle.read(BLOCK_BYTES)
            if not data:
                break
            if pending:
                data = pending + data
            cut = data.rfind(b"\n") + 1
            if cut:
                block = Block(number, data if cut == len(data) else data[:cut])
                yield block
                number += block.data.count(b"\n") if block.lines is None else block.lines
            pending = data[cut:]
            if len(pending) > MAX_LINE_BYTES:
                raise long_line(name, number, kind, layout)
        if pending:
            yield Block(number, pending + b"\n")
    except READ_ERRORS as exc:
        raise read_failure(name, kind, exc) from None
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()


def block_lines(
    block: Block, name: str, n_columns: int, kind: str, layout: str, extra_ok: bool = False
) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each line of the block that is neither blank nor a `#` comment.

    Columns are split on whitespace; a line with the wrong number of columns (fewer than `n_columns`
    when `extra_ok`, whose extra fields are dropped), past the line cap or not UTF-8 raises, naming it.
    """
    lines = block.data.split(b"\n")
    lines.pop()  # the block ends with a newline: nothing follows it
    block.lines = len(lines)
    for number, raw in enumerate(lines, start=block.first):
        if len(raw) > MAX_LINE_BYTES:
            raise long_line(name, number, kind, layout)
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise DataError(f"{name}:{number}: not valid UTF-8", "save the file as UTF-8") from None
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != n_columns and not (extra_ok and len(fields) > n_columns):
            expected = f"at least {n_columns}" if extra_ok else str(n_columns)
            raise DataError(
                f"{name}:{number}: expected {expected} columns, got {len(fields)}",
                f"{kind} lines are {layout}",
            )
        yield number, fields[:n_columns]

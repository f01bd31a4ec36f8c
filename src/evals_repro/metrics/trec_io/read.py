"""Readers for TREC run files (`qid Q0 docid rank score tag`) and qrels (`qid 0 docid rel`).

As trec_eval reads them: columns are whitespace-separated; blank lines and lines starting with
`#` are skipped (a `#` inside an id is part of it); run lines may carry fields after the sixth,
which are ignored. A path `-` reads standard input; gzip files are read as such (detected by
their magic bytes). Every problem is one DataError naming `file:line`. The rank column is
ignored, as in trec_eval: the order comes from the scores.

Files are read a line at a time, and a line longer than `MAX_LINE_BYTES` is refused as soon as that
many bytes are read: a file that is not a TREC file (a binary, a 2 GB JSON blob without line breaks)
costs a megabyte of memory and a moment, not its whole size. A damaged gzip body is one DataError
naming the file, as is any other read failure.
"""

from __future__ import annotations

import gzip
import math
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from ...base.errors import DataError

STDIN = "-"

RUN_LAYOUT = "`qid Q0 docid rank score tag`"
QRELS_LAYOUT = "`qid 0 docid relevance`"
# Far above any real TREC line (a few ids and numbers); a longer "line" means the file is something else.
MAX_LINE_BYTES = 1 << 20
# What a damaged file raises while it is read: truncated or corrupt gzip, an I/O error.
READ_ERRORS = (OSError, EOFError, zlib.error)


def _open(path: str | Path, kind: str) -> IO[bytes]:
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


def _raw_lines(handle: IO[bytes], name: str, kind: str, layout: str) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of each line, never holding more than MAX_LINE_BYTES of one line."""
    number = 0
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise DataError(
                f"{name}:{number}: line is longer than {MAX_LINE_BYTES // (1 << 20)} MiB; "
                f"this does not look like a {kind} file",
                f"{kind} lines are {layout}, one per line",
            )
        yield number, raw


def _read_failure(name: str, kind: str, exc: BaseException) -> DataError:
    """A damaged file, in one line: the gzip body (bad data, cut short) or the disk."""
    if isinstance(exc, (zlib.error, EOFError, gzip.BadGzipFile)):
        why = str(exc) or type(exc).__name__
        return DataError(
            f"{name}: the {kind} file is not valid gzip ({why})",
            "the file is damaged or cut short: copy or download it again, or give it uncompressed",
        )
    why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return DataError(f"{name}: cannot read the {kind} file ({why})", "check that the file is complete and readable")


def _where(path: str | Path) -> str:
    return "<stdin>" if str(path) == STDIN else str(path)


def iter_columns(
    path: str | Path, n_columns: int, kind: str, layout: str, extra_ok: bool = False
) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) for each line that is neither blank nor a `#` comment.

    Wrong column counts (fewer than `n_columns` when `extra_ok`, whose extra fields are dropped)
    and files without a data line raise.
    """
    name = _where(path)
    seen_any = False
    handle = _open(path, kind)
    try:
        for number, raw in _raw_lines(handle, name, kind, layout):
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
            seen_any = True
            yield number, fields[:n_columns]
    except READ_ERRORS as exc:
        raise _read_failure(name, kind, exc) from None
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()
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
        where = "earlier"
    else:
        extra_ok = kind == "run"
        first = next(
            n
            for n, fields in iter_columns(path, n_columns, kind, layout, extra_ok)
            if fields[0] == qid and fields[2] == docid
        )
        where = f"first at line {first}"
    return DataError(
        f"{_where(path)}:{number}: document {docid} is {verb} twice for query {qid} ({where})",
        f"keep one line per query and document; {kind} lines are {layout}",
    )


def read_trec_run(path: str | Path) -> dict[str, dict[str, float]]:
    """A TREC run as `{qid: {docid: score}}`; a docid listed twice for one query is an error."""
    return read_trec_run_and_tag(path)[0]


def read_trec_run_and_tag(path: str | Path) -> tuple[dict[str, dict[str, float]], str]:
    """The run and its tag (the sixth column of its last line: what trec_eval prints as runid)."""
    run: dict[str, dict[str, float]] = {}
    tag = ""
    for number, (qid, _q0, docid, _rank, score_text, line_tag) in iter_columns(path, 6, "run", RUN_LAYOUT, True):
        tag = line_tag
        where = f"{_where(path)}:{number}"
        score = _parse(score_text, float, where, "score", f"the fifth column is the score; lines are {RUN_LAYOUT}")
        if math.isnan(score):
            raise DataError(
                f"{where}: score is NaN", f"every retrieved document needs a numeric score; lines are {RUN_LAYOUT}"
            )
        docs = run.setdefault(qid, {})
        if docid in docs:
            raise _duplicate(path, number, qid, docid, 6, "run", RUN_LAYOUT)
        docs[docid] = score
    return run, tag


def read_trec_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """TREC qrels as `{qid: {docid: relevance}}` with integer grades; duplicates are an error."""
    qrels: dict[str, dict[str, int]] = {}
    for number, (qid, _iteration, docid, rel_text) in iter_columns(path, 4, "qrels", QRELS_LAYOUT):
        where = f"{_where(path)}:{number}"
        rel = _parse(
            rel_text, int, where, "relevance", f"the fourth column is an integer grade; lines are {QRELS_LAYOUT}"
        )
        docs = qrels.setdefault(qid, {})
        if docid in docs:
            raise _duplicate(path, number, qid, docid, 4, "qrels", QRELS_LAYOUT)
        docs[docid] = rel
    return qrels

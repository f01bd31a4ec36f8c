"""Readers for TREC run files (`qid Q0 docid rank score tag`) and qrels (`qid 0 docid rel`).

Columns are whitespace-separated, as trec_eval reads them; blank lines are skipped. Every
problem is one DataError naming `file:line`. The rank column is ignored, as in trec_eval:
the order comes from the scores.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import DataError

RUN_LAYOUT = "`qid Q0 docid rank score tag`"
QRELS_LAYOUT = "`qid 0 docid relevance`"


def iter_columns(path: str | Path, n_columns: int, kind: str, layout: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) for each non-blank line; wrong column counts and empty files raise."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: {kind} file not found", "check the path")
    if not path.is_file():
        raise DataError(f"{path}: {kind} path is not a file", "give the path of a file")
    seen_any = False
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise DataError(f"{path}:{number}: not valid UTF-8", "save the file as UTF-8") from None
            fields = line.split()
            if not fields:
                continue
            if len(fields) != n_columns:
                raise DataError(
                    f"{path}:{number}: expected {n_columns} columns, got {len(fields)}",
                    f"{kind} lines are {layout}",
                )
            seen_any = True
            yield number, fields
    if not seen_any:
        raise DataError(f"{path}: {kind} file is empty", f"{kind} lines are {layout}")


def _parse(text: str, convert: Callable[[str], float], where: str, what: str, hint: str):
    try:
        return convert(text)
    except ValueError:
        expected = "an integer" if convert is int else "a number"
        raise DataError(f"{where}: {what} '{text}' is not {expected}", hint) from None


def _duplicate(path, number: int, qid: str, docid: str, n_columns: int, kind: str, layout: str) -> DataError:
    """The error for a repeated (qid, docid); the first occurrence is found by re-reading the file."""
    first = next(
        n for n, fields in iter_columns(path, n_columns, kind, layout) if fields[0] == qid and fields[2] == docid
    )
    verb = "listed" if kind == "run" else "judged"
    return DataError(
        f"{path}:{number}: document {docid} is {verb} twice for query {qid} (first at line {first})",
        f"keep one line per query and document; {kind} lines are {layout}",
    )


def read_trec_run(path: str | Path) -> dict[str, dict[str, float]]:
    """A TREC run as `{qid: {docid: score}}`; a docid listed twice for one query is an error."""
    run: dict[str, dict[str, float]] = {}
    for number, (qid, _q0, docid, _rank, score_text, _tag) in iter_columns(path, 6, "run", RUN_LAYOUT):
        where = f"{path}:{number}"
        score = _parse(score_text, float, where, "score", f"the fifth column is the score; lines are {RUN_LAYOUT}")
        if math.isnan(score):
            raise DataError(
                f"{where}: score is NaN", f"every retrieved document needs a numeric score; lines are {RUN_LAYOUT}"
            )
        docs = run.setdefault(qid, {})
        if docid in docs:
            raise _duplicate(path, number, qid, docid, 6, "run", RUN_LAYOUT)
        docs[docid] = score
    return run


def read_trec_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """TREC qrels as `{qid: {docid: relevance}}` with integer grades; duplicates are an error."""
    qrels: dict[str, dict[str, int]] = {}
    for number, (qid, _iteration, docid, rel_text) in iter_columns(path, 4, "qrels", QRELS_LAYOUT):
        where = f"{path}:{number}"
        rel = _parse(
            rel_text, int, where, "relevance", f"the fourth column is an integer grade; lines are {QRELS_LAYOUT}"
        )
        docs = qrels.setdefault(qid, {})
        if docid in docs:
            raise _duplicate(path, number, qid, docid, 4, "qrels", QRELS_LAYOUT)
        docs[docid] = rel
    return qrels

"""BEIR layout (`corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv`), used by `sample` and user folders.

Extensions over plain BEIR, all optional: a query's `language` (else the subset's native
language) and `metadata` (query type, format...); a corpus record's `title`.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

from ..base.data import Page, Qrels, Query, Subset
from ..base.errors import DataError, UsageError
from ..base.registry import LOADERS
from .declaration import BenchmarkDeclaration, LoadOptions
from .registry import benchmarks_dir


def _folder(decl: BenchmarkDeclaration, name: str) -> Path:
    source = decl.subset_source(name)
    raw = source.get("path")
    if raw is None:
        raise DataError(f"benchmark {decl.name}: subset {name} declares no source path", "add path = ...")
    raw = str(raw).format(subset=name)
    path = Path(raw)
    if not path.is_absolute():  # relative to the declaration's folder (a plugin's own, or benchmarks/)
        origin = decl.origin
        path = (origin.parent if origin is not None and origin.suffix == ".toml" else benchmarks_dir()) / path
    return path


# Longest line read (characters): a JSONL record holds a whole page's text, a qrels row three fields. A longer
# "line" (a file without line breaks) is refused once that much is read, not after reading it whole.
MAX_JSONL_LINE = 16 << 20
MAX_TSV_LINE = 1 << 20


def _lines(path: Path, max_chars: int) -> Iterator[str]:
    """The file's lines, streamed: a BOM is dropped and bytes that are not UTF-8 are one clear error, as is
    a line longer than `max_chars`.

    Only \\n, \\r\\n and \\r end a line (not U+2028, which JSON strings may hold raw).
    """
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            number = 0
            while line := handle.readline(max_chars + 1):
                number += 1
                if len(line) > max_chars and not line.endswith(("\n", "\r")):
                    raise DataError(
                        f"{path}:{number}: line is longer than {max_chars >> 20} MiB characters",
                        "a BEIR file holds one record per line: is this the right file?",
                    )
                yield line.rstrip("\r\n")
    except UnicodeDecodeError:
        pass
    except OSError as exc:  # a directory in the file's place, no read permission, an I/O error
        why = "it is a directory" if path.is_dir() else (exc.strerror or type(exc).__name__).lower()
        raise DataError(f"{path}: cannot read the file ({why})", "a BEIR folder needs readable files there") from None
    else:
        return
    # Decoding runs ahead in chunks, so find the offending line from the raw bytes.
    data = path.read_bytes()
    try:
        data.decode("utf-8")
        lineno = 0
    except UnicodeDecodeError as exc:
        lineno = data[: exc.start].count(b"\n") + 1
    raise DataError(f"{path}:{lineno}: not valid UTF-8", "re-encode the file as UTF-8")


def _read_jsonl(path: Path, required: tuple[str, ...]) -> list[dict]:
    if not path.exists():
        raise DataError(f"{path}: file not found", "a BEIR folder needs corpus.jsonl, queries.jsonl, qrels/test.tsv")
    records = []
    for number, line in enumerate(_lines(path, MAX_JSONL_LINE), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{number}: not valid JSON ({exc.msg})", "fix or regenerate the file") from None
        if not isinstance(record, dict):
            raise DataError(f"{path}:{number}: expected a JSON object", "one object per line")
        missing = [key for key in required if key not in record]
        if missing:
            raise DataError(
                f"{path}:{number}: missing field {', '.join(missing)}",
                f"each line needs {', '.join(required)}",
            )
        records.append(record)
    if not records:
        raise DataError(f"{path}: file is empty", "a BEIR folder needs at least one record per file")
    return records


def read_qrels_tsv(path: Path) -> Qrels:
    if not path.exists():
        raise DataError(f"{path}: file not found", "a BEIR folder needs qrels/test.tsv")
    qrels: Qrels = {}
    # QUOTE_NONE: ids are taken verbatim; a quote in an id must not swallow the rest of the file.
    rows = list(csv.reader(_lines(path, MAX_TSV_LINE), delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows:
        raise DataError(f"{path}: file is empty", "add `query-id corpus-id score` rows")
    start = 1 if rows[0] and rows[0][0] in ("query-id", "query_id", "qid") else 0
    first_line: dict[tuple[str, str], int] = {}  # (query, page) -> line of its first judgment
    for number, row in enumerate(rows[start:], start=start + 1):
        if not row:
            continue
        if len(row) != 3:
            raise DataError(
                f"{path}:{number}: expected 3 tab-separated columns, got {len(row)}",
                "rows are `query-id<TAB>corpus-id<TAB>score`",
            )
        try:
            score = int(row[2])
        except ValueError:
            raise DataError(
                f"{path}:{number}: score '{row[2]}' is not an integer", "use graded integer scores"
            ) from None
        judged = qrels.setdefault(row[0], {})
        if row[1] in judged and judged[row[1]] != score:
            earlier = first_line[(row[0], row[1])]
            raise DataError(
                f"{path}:{number}: query {row[0]} judges page {row[1]} {score}, but line {earlier} judged it "
                f"{judged[row[1]]}",
                "keep one grade per (query, page) pair and delete the other line",
            )
        first_line.setdefault((row[0], row[1]), number)
        judged[row[1]] = score
    if not qrels:
        raise DataError(f"{path}: no judgments after the header", "add `query-id corpus-id score` rows")
    return qrels


@LOADERS.register("beir", description="BEIR layout folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
def load(decl: BenchmarkDeclaration, name: str, options: LoadOptions) -> Subset:
    folder = _folder(decl, name)
    if options.revision:
        raise UsageError(
            f"{decl.name}/{name}: --revision {options.revision} does not apply to a local BEIR folder "
            "(it picks a Hub revision)",
            "drop --revision: the files on disk are what is loaded",
        )
    if options.content != "markdown":
        raise DataError(
            f"benchmark {decl.name}: --content {options.content} is not available",
            "BEIR folders hold text only; use --content markdown",
        )
    native = decl.subset(name).native_language
    pages = [
        Page(
            id=str(r["_id"]),
            text=str(r.get("text") or ""),
            title=(str(r["title"]) if r.get("title") else None),
            metadata=dict(r.get("metadata") or {}),
        )
        for r in _read_jsonl(folder / "corpus.jsonl", ("_id",))
    ]
    queries = [
        Query(
            id=str(r["_id"]),
            text=str(r["text"]),
            language=str(r.get("language") or native),
            metadata=dict(r.get("metadata") or {}),
        )
        for r in _read_jsonl(folder / "queries.jsonl", ("_id", "text"))
    ]
    qrels = read_qrels_tsv(folder / "qrels" / "test.tsv")
    known = {q.id for q in queries}
    # BEIR folders often ship queries of every split; keep those judged in test.
    queries = [q for q in queries if q.id in qrels] if any(q in known for q in qrels) else queries
    return Subset(
        benchmark=decl.name,
        name=name,
        native_language=native,
        pages=pages,
        queries=queries,
        qrels=qrels,
        source={"kind": "beir", "path": str(folder), "origin": str(folder)},
    )

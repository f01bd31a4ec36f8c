"""Saved runs: rankings and judgments written in TREC format, so any result can be re-scored.

`run` writes `<subset>.run.gz` (`qid Q0 docid rank score tag`, queries in id order, each ranked the
trec_eval way: score descending, then doc id descending) and `<subset>.qrels.gz` (`qid 0 docid grade`)
beside every result file; `rerank-study prepare` freezes its candidates through the same writer.
Scores are written in full (shortest round-trip repr), so reading a file back gives the same doubles.
Files are gzip with a fixed timestamp (identical runs give identical bytes); `run` writes them with their
result as one unit (`io.write_unit`), and `saved_files_differ` tells a result whose files are not its own.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.io import atomic_write_bytes
from ..metrics.ranking import trec_ranked


@dataclass(frozen=True)
class WrittenFile:
    path: Path
    sha256: str
    n_queries: int
    n_lines: int


def ordered(scores: Mapping[str, float], score_precision: str = "float32") -> list[tuple[str, float]]:
    """One query's (doc, score) pairs in trec_eval order: float32 comparisons (trec_eval 9) or doubles (10)."""
    if score_precision == "float64":
        return sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)
    return trec_ranked(scores)


def run_lines(run: Mapping[str, Mapping[str, float]], tag: str, score_precision: str = "float32") -> list[str]:
    lines = []
    for qid in sorted(run):
        for rank, (doc, score) in enumerate(ordered(run[qid], score_precision), start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {float(score)!r} {tag}")
    return lines


@dataclass(frozen=True)
class Encoded:
    """A saved file's bytes before they are written (a result unit writes them together, see io.write_unit)."""

    data: bytes
    sha256: str
    n_queries: int
    n_lines: int


def _gz(lines: list[str], n_queries: int) -> Encoded:
    payload = ("\n".join(lines) + "\n").encode("utf-8") if lines else b""
    data = gzip.compress(payload, mtime=0)
    return Encoded(data, hashlib.sha256(data).hexdigest(), n_queries, len(lines))


def encode_run(run: Mapping[str, Mapping[str, float]], tag: str, score_precision: str = "float32") -> Encoded:
    """A run's file; the tag must be one whitespace-free token (a method label is)."""
    tag = "".join(tag.split()) or "run"
    return _gz(run_lines(run, tag, score_precision), len(run))


def encode_qrels(qrels: Mapping[str, Mapping[str, int]]) -> Encoded:
    lines = [f"{qid} 0 {doc} {int(grade)}" for qid in sorted(qrels) for doc, grade in sorted(qrels[qid].items())]
    return _gz(lines, len(qrels))


def encode_gains(gains: Mapping[str, Mapping[str, float]]) -> Encoded:
    """Float gains in TREC qrels layout (`qid 0 docid gain`), as `evaluate --gains` reads them."""
    lines = [f"{qid} 0 {doc} {float(g)!r}" for qid in sorted(gains) for doc, g in sorted(gains[qid].items())]
    return _gz(lines, len(gains))


def _write(path: Path, encoded: Encoded) -> WrittenFile:
    atomic_write_bytes(Path(path), encoded.data)
    return WrittenFile(Path(path), encoded.sha256, encoded.n_queries, encoded.n_lines)


def write_trec_run(
    path: Path, run: Mapping[str, Mapping[str, float]], tag: str, score_precision: str = "float32"
) -> WrittenFile:
    """Write a run; the tag must be one whitespace-free token (a method label is)."""
    return _write(path, encode_run(run, tag, score_precision))


def write_trec_qrels(path: Path, qrels: Mapping[str, Mapping[str, int]]) -> WrittenFile:
    return _write(path, encode_qrels(qrels))


def write_trec_gains(path: Path, gains: Mapping[str, Mapping[str, float]]) -> WrittenFile:
    """Float gains in TREC qrels layout (`qid 0 docid gain`), as `evaluate --gains` reads them."""
    return _write(path, encode_gains(gains))


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_saved_run(path: Path) -> dict[str, dict[str, float]]:
    """A saved run as `{qid: {doc: score}}`, read by `evaluate`'s reader (an empty run is `{}`)."""
    from ..metrics.trec_io.read import RUN, read_table

    return read_table(path, RUN, empty_ok=True)[0]


def read_saved_qrels(path: Path) -> dict[str, dict[str, int]]:
    from ..metrics.trec_io.read import QRELS, read_table

    return read_table(path, QRELS, empty_ok=True)[0]  # type: ignore[return-value]


def read_saved_gains(path: Path) -> dict[str, dict[str, float]]:
    from ..metrics.trec_io.read import SAVED_GAINS, read_table

    return read_table(path, SAVED_GAINS, empty_ok=True)[0]


def saved_files_differ(result_path: Path, record: Any) -> tuple[Path, bool] | None:
    """The first saved file of a result that is missing (`(path, True)`) or not the one its record names
    (`(path, False)`: its sha256 differs); None when the run, judgments and gains are all its own."""
    folder = Path(result_path).parent
    files = [(record.run.path, record.run.sha256), (record.run.qrels_path, record.run.qrels_sha256)]
    if record.run.gains_path:
        files.append((record.run.gains_path, record.run.gains_sha256 or ""))
    for name, digest in files:
        path = folder / name
        if not path.exists():
            return path, True
        if file_sha256(path) != digest:
            return path, False
    return None


def checked_record(result_path: Path) -> Any:
    """A result's record once its saved run, judgments and gains are checked to be its own (sha256), for
    re-scoring them; a missing or changed file is a one-line DataError. The files are read by their scorer."""
    from ..base.errors import DataError
    from .results import DamagedResult, load_record

    try:
        record = load_record(result_path)
    except DamagedResult as exc:  # its hint ("delete it") suits a file under results/, not any file named here
        raise DataError(
            exc.message,
            "give a result file written by `evals-repro run` (results/<benchmark>/<method>/<subset>.json); "
            "rerun that subset if it is damaged",
        ) from None
    differs = saved_files_differ(result_path, record)
    if differs is not None:
        path, missing = differs
        if missing:
            raise DataError(f"{path}: the saved file of {result_path} is missing", "rerun that subset to write it")
        raise DataError(
            f"{path}: the saved file changed since {result_path} was written (sha256 differs)",
            "rerun that subset, or restore the file",
        )
    return record

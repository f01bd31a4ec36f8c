"""TREC run and qrels readers: valid layouts, and one-line errors naming file:line."""

from __future__ import annotations

import pytest

from evals_repro import metrics as M
from evals_repro.base.errors import DataError


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_read_run_and_qrels(tmp_path):
    run = write(tmp_path, "run.txt", "q1 Q0 d1 1 2.5 tag\n\nq1\tQ0\td2\t2\t  -1e3\ttag\nq2 Q0 d1 1 7 tag\n")
    qrels = write(tmp_path, "qrels.txt", "q1 0 d1 2\nq1 0 d2 0\n\nq2 0 d9 -1\n")
    assert M.read_trec_run(run) == {"q1": {"d1": 2.5, "d2": -1000.0}, "q2": {"d1": 7.0}}
    assert M.read_trec_qrels(qrels) == {"q1": {"d1": 2, "d2": 0}, "q2": {"d9": -1}}


@pytest.mark.parametrize(
    "text, message",
    [
        ("q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5\n", ":2: expected at least 6 columns, got 5"),
        ("q1 Q0 d1 1 high tag\n", ":1: score 'high' is not a number"),
        ("q1 Q0 d1 1 nan tag\n", ":1: score is NaN"),
        (
            "q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 2.0 tag\nq1 Q0 d1 3 1.0 tag\n",
            ":3: document d1 is listed twice for query q1 (first at line 1)",
        ),
        ("", ": run file is empty"),
        ("\n  \n", ": run file is empty"),
    ],
)
def test_run_errors(tmp_path, text, message):
    path = write(tmp_path, "run.txt", text)
    with pytest.raises(DataError) as info:
        M.read_trec_run(path)
    line = info.value.one_line()
    assert f"{path}{message}" in line
    assert "\n" not in line and "qid Q0 docid rank score tag" in line


@pytest.mark.parametrize(
    "text, message",
    [
        ("q1 0 d1\n", ":1: expected 4 columns, got 3"),
        ("q1 0 d1 1\nq1 0 d2 yes\n", ":2: relevance 'yes' is not an integer"),
        ("q1 0 d1 0.5\n", ":1: relevance '0.5' is not an integer"),
        ("q1 0 d1 1\nq1 0 d1 2\n", ":2: document d1 is judged twice for query q1 (first at line 1)"),
        ("", ": qrels file is empty"),
    ],
)
def test_qrels_errors(tmp_path, text, message):
    path = write(tmp_path, "qrels.txt", text)
    with pytest.raises(DataError) as info:
        M.read_trec_qrels(path)
    line = info.value.one_line()
    assert f"{path}{message}" in line
    assert "\n" not in line and "qid 0 docid relevance" in line


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DataError, match="run file not found"):
        M.read_trec_run(tmp_path / "nope.txt")
    with pytest.raises(DataError, match="qrels path is not a file"):
        M.read_trec_qrels(tmp_path)


def test_non_utf8_line(tmp_path):
    path = tmp_path / "run.txt"
    path.write_bytes(b"q1 Q0 d1 1 1.0 tag\nq1 Q0 d\xff 2 0.5 tag\n")
    with pytest.raises(DataError, match=r":2: not valid UTF-8"):
        M.read_trec_run(path)


def test_trec_eval_input_conventions(tmp_path):
    """Fields after the sixth ignored, `#` comment lines and blank lines skipped, `#` inside ids kept."""
    run = write(
        tmp_path,
        "run.txt",
        "# a comment\n  # an indented comment\nq1 Q0 d#1 1 2.5 tag more junk at\n\nq1 Q0 d2 2 1.5 tag end of lines.\n",
    )
    qrels = write(tmp_path, "qrels.txt", "# judged by hand\nq1 0 d#1 1\n\n#q1 0 d2 1\nq1 0 d2 0\n")
    assert M.read_trec_run(run) == {"q1": {"d#1": 2.5, "d2": 1.5}}
    assert M.read_trec_qrels(qrels) == {"q1": {"d#1": 1, "d2": 0}}
    from evals_repro.metrics.trec_io.read import read_trec_run_and_tag

    assert read_trec_run_and_tag(run)[1] == "tag"


def test_gzip_files_are_read(tmp_path):
    import gzip

    path = tmp_path / "run.gz"
    path.write_bytes(gzip.compress(b"q1 Q0 d1 1 2.5 tag\n"))
    assert M.read_trec_run(path) == {"q1": {"d1": 2.5}}
    truncated = tmp_path / "cut.gz"
    body = "".join(f"q1 Q0 d{i} {i} {1 / (i + 1)} tag\n" for i in range(2000)).encode()
    truncated.write_bytes(gzip.compress(body)[:-100])
    with pytest.raises(DataError, match="cut.gz: the run file is not valid gzip"):
        M.read_trec_run(truncated)


def test_dash_reads_standard_input(monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"q1 Q0 d1 1 2.5 t\nq1 Q0 d1 2 1.5 t\n")))
    with pytest.raises(DataError, match=r"<stdin>:2: document d1 is listed twice for query q1 \(earlier\)"):
        M.read_trec_run("-")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"q1 Q0 d1 1 2.5 t\n")))
    assert M.read_trec_run("-") == {"q1": {"d1": 2.5}}

"""A damaged line inside an append-only JSONL file is set aside, never the file (issue 22, item 11).

`rerank-study quality` with one damaged line in the middle of `quality.jsonl` used to stop and advise moving the
file away, throwing away every paid record in it. Its writer now moves the line to `quality.jsonl.damaged`,
names it in one warning, keeps every other record (their requests are not sent again) and redoes only what the
damaged line recorded; readers (`rerank-study report`) leave the line out with a warning and change nothing.
"""

from __future__ import annotations

import json

import pytest

from evals_repro.base.errors import DataError
from evals_repro.base.io import JsonlAppender, read_jsonl
from evals_repro.cli import main
from evals_repro.study.quality import QUALITY
from fakes.rerankers import FakeCohereRerank, count_requests
from study_fixtures import copy_study, prepare_sample


def test_the_writer_sets_a_damaged_line_aside_and_keeps_the_rest(tmp_path, caplog):
    path = tmp_path / "q.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": \n[3]\n{"a": 4}\n{"a": 5')  # 2 damaged lines, then a torn last one
    with JsonlAppender(path) as out:
        out.append({"a": 6})
    assert read_jsonl(path) == [{"a": 1}, {"a": 4}, {"a": 6}]
    assert (tmp_path / "q.jsonl.damaged").read_bytes() == b'{"a": \n[3]\n'
    warning = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warning == [
        f"{path}: line(s) 2, 3 damaged (not JSON objects): set aside in {tmp_path / 'q.jsonl.damaged'}, every "
        "other record kept; what they recorded is done again"
    ]


def test_a_reader_leaves_a_damaged_line_out_and_changes_nothing(tmp_path, caplog):
    path = tmp_path / "q.jsonl"
    content = b'{"a": 1}\n\xff\xfe\n{"a": 3}\n'
    path.write_bytes(content)
    assert read_jsonl(path, damaged="skip") == [{"a": 1}, {"a": 3}]
    assert path.read_bytes() == content and not (tmp_path / "q.jsonl.damaged").exists()
    assert "line(s) 2 damaged" in caplog.text and "q.jsonl.damaged" in caplog.text
    with pytest.raises(DataError, match="line 2 is damaged") as raised:
        read_jsonl(path)  # files whose every line is needed (frozen candidates)
    assert "move" not in raised.value.one_line()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return prepare_sample(tmp_path_factory.mktemp("prepared"), ("heat-pumps",))


def test_rerank_study_quality_sets_a_damaged_line_aside_and_pays_only_for_it(prepared, tmp_path, monkeypatch, capsys):
    study = copy_study(prepared, tmp_path)
    with FakeCohereRerank() as cohere:
        monkeypatch.setenv("CO_API_URL", cohere.url)
        monkeypatch.setenv("CO_API_KEY", "k")
        args = ["rerank-study", "quality", "--models", "cohere-pro", "--study-dir", str(study)]
        args += ["--cache-dir", str(tmp_path / "cache")]
        assert main(args) == 0
        capsys.readouterr()
        queries = count_requests(cohere, "POST", "/v2/rerank")
        lines = (study / QUALITY).read_bytes().splitlines(keepends=True)
        assert len(lines) == queries > 3
        damaged = lines[1][: len(lines[1]) // 2] + b"\n"  # a torn record in the middle (a bad disk, an editor)
        (study / QUALITY).write_bytes(lines[0] + damaged + b"".join(lines[2:]))

        code = main(args)
        err = capsys.readouterr().err
        assert code == 0, err
        assert "move it away" not in err and "error:" not in err
        side = study / "quality.jsonl.damaged"
        assert f"warning: {study / QUALITY}: line(s) 2 damaged (not JSON objects): set aside in {side}" in err
        assert side.read_bytes() == damaged
        assert count_requests(cohere, "POST", "/v2/rerank") == queries + 1  # only the damaged line's request
        records = read_jsonl(study / QUALITY)
        assert len(records) == queries and records[: queries - 1] == [json.loads(x) for x in [lines[0], *lines[2:]]]
        assert records[-1]["request_digest"] == json.loads(lines[1])["request_digest"]


def test_a_full_disk_while_appending_is_one_line_and_keeps_every_record_written(
    prepared, tmp_path, monkeypatch, capsys
):
    """Issue 22, item 2 for the study: ENOSPC appending to quality.jsonl names the file, exits 2, keeps what was
    appended (the next run sends only the rest)."""
    import errno
    import os

    study = copy_study(prepared, tmp_path)
    real_fsync = os.fsync
    appended: list[int] = []

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(QUALITY):
            appended.append(fd)
            if len(appended) == 4:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    with FakeCohereRerank() as cohere:
        monkeypatch.setenv("CO_API_URL", cohere.url)
        monkeypatch.setenv("CO_API_KEY", "k")
        args = ["rerank-study", "quality", "--models", "cohere-pro", "--study-dir", str(study)]
        args += ["--cache-dir", str(tmp_path / "cache"), "--quality-workers", "1"]
        monkeypatch.setattr(os, "fsync", fsync)
        code = main(args)
        monkeypatch.setattr(os, "fsync", real_fsync)
        err = capsys.readouterr().err
        assert code == 2, err
        assert "Traceback" not in err
        lines = [line for line in err.splitlines() if line.startswith("error: ")]
        assert lines == [
            f"error: cannot write {study / QUALITY} (No space left on device): free at least "
            + lines[0].split("free at least ", 1)[1]
        ]
        assert f"on the disk holding {study}" in lines[0] and lines[0].endswith(
            "then rerun (what was finished is kept)"
        )
        kept = read_jsonl(study / QUALITY)
        assert len(kept) >= 3
        sent = count_requests(cohere, "POST", "/v2/rerank")
        assert main(args) == 0
        final = read_jsonl(study / QUALITY)
        assert final[: len(kept)] == kept and len(final) > len(kept)
        assert count_requests(cohere, "POST", "/v2/rerank") - sent == len(final) - len(kept)  # only the rest

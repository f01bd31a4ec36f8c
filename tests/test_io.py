import json

import pytest

from evals_repro.base.errors import DataError
from evals_repro.base.io import JsonlAppender, atomic_write_json, read_jsonl


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "a" / "r.json"
    atomic_write_json(target, {"x": 1})
    atomic_write_json(target, {"x": 2})
    assert json.loads(target.read_text()) == {"x": 2}
    assert [p.name for p in target.parent.iterdir()] == ["r.json"]


def test_torn_last_line_is_dropped_and_repaired(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a": 3')
    assert read_jsonl(path) == [{"a": 1}, {"a": 2}]
    with JsonlAppender(path) as out:
        out.append({"a": 4})
    assert read_jsonl(path) == [{"a": 1}, {"a": 2}, {"a": 4}]


def test_complete_last_line_without_newline_is_kept(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}')
    with JsonlAppender(path) as out:
        out.append({"a": 3})
    assert read_jsonl(path) == [{"a": 1}, {"a": 2}, {"a": 3}]


def test_damage_in_the_middle_is_an_error(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": \n{"a": 3}\n')
    with pytest.raises(DataError, match="line 2"):
        read_jsonl(path)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_new_files_honour_the_umask_and_replaced_files_keep_their_mode(tmp_path, umask):
    import os
    import stat

    old = os.umask(umask)
    try:
        target = tmp_path / f"r{umask:o}.json"
        atomic_write_json(target, {"x": 1})
        assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
        target.chmod(0o640)
        atomic_write_json(target, {"x": 2})
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
    finally:
        os.umask(old)

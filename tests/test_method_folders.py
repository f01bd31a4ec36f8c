"""Result folders have portable names that map back to the method (issue 22, item 14).

`:` (of `rrf:` and `reranker:model`) and `/` (of a Hub model id) are not allowed in Windows folder names and some
sync tools refuse them; a `/` even nested the result one folder deeper, where no report found it. The folder is
the label percent-encoded (`rrf%3Abm25+scripted`), results written under the old name are moved on the next run,
and fusing a method with itself is refused.
"""

from __future__ import annotations

import pytest

import scripted_method
from evals_repro.base.registry import METHODS
from evals_repro.cli import main
from evals_repro.records.results import method_folder, method_of_folder

WINDOWS_FORBIDDEN = set('<>:"/\\|?*')


def cli(args: list[str], capsys) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out + captured.err


@pytest.mark.parametrize(
    "label, folder",
    [
        ("bm25", "bm25"),
        ("rrf:bm25+minilm", "rrf%3Abm25+minilm"),
        ("bm25+cohere:rerank-v4.0-pro@50", "bm25+cohere%3Arerank-v4.0-pro@50"),
        (
            "bm25+mixedbread:mixedbread-ai/mxbai-rerank-large-v2@50",
            "bm25+mixedbread%3Amixedbread-ai%2Fmxbai-rerank-large-v2@50",
        ),
        ("mixedbread-images+rerank[images]", "mixedbread-images+rerank[images]"),
        ("odd%3Aname", "odd%253Aname"),  # a literal % is encoded too, so no two labels share a folder
    ],
)
def test_folder_names_are_portable_and_map_back(label, folder):
    assert method_folder(label) == folder
    assert not WINDOWS_FORBIDDEN & set(folder)
    assert method_of_folder(folder) == label


def test_fusing_a_method_with_itself_is_refused_in_one_line(tmp_path, capsys):
    code, text = cli(["run", "rrf:bm25+bm25", "-b", "sample", "--results-dir", str(tmp_path / "r")], capsys)
    assert code == 2
    lines = [line for line in text.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "'rrf:bm25+bm25' fuses bm25 more than once" in lines[0], text
    assert "rrf:bm25+" in lines[0].split(":", 3)[-1]  # the hint shows a valid fusion
    assert not (tmp_path / "r" / "sample").exists()


@pytest.fixture
def scripted(registered, monkeypatch):
    registered(METHODS, "scripted", scripted_method.build)
    monkeypatch.setattr(scripted_method, "SCRIPT", {})


def test_an_rrf_result_lives_in_a_portable_folder_and_reports_under_its_method(tmp_path, capsys, scripted):
    results = tmp_path / "results"
    args = ["run", "rrf:bm25+scripted", "-b", "sample", "-s", "heat-pumps", "--results-dir", str(results)]
    args += ["--cache-dir", str(tmp_path / "cache")]
    code, text = cli(args, capsys)
    assert code == 0, text
    folders = [p.name for p in (results / "sample").iterdir()]
    assert folders == ["rrf%3Abm25+scripted"]
    assert not [p for p in results.rglob("*") if ":" in p.name]
    code, text = cli(["report", "-b", "sample", "--results-dir", str(results)], capsys)
    assert code == 0 and "| rrf:bm25+scripted |" in text, text


def test_results_under_the_old_folder_name_are_moved_and_kept_by_resume(tmp_path, capsys, scripted):
    results = tmp_path / "results"
    args = ["run", "rrf:bm25+scripted", "-b", "sample", "-s", "heat-pumps", "--results-dir", str(results)]
    args += ["--cache-dir", str(tmp_path / "cache")]
    assert cli(args, capsys)[0] == 0
    old = results / "sample" / "rrf:bm25+scripted"
    (results / "sample" / "rrf%3Abm25+scripted").rename(old)  # as an earlier version left it
    code, text = cli([*args, "--resume"], capsys)
    assert code == 0
    assert f"moved {old} to {results / 'sample' / 'rrf%3Abm25+scripted'}" in text
    assert "heat-pumps: complete result kept" in text
    assert not old.exists()

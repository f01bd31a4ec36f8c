"""Bad input through the CLI: one line naming the path, option or line and the fix; exit != 0; nothing lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beir_folder import write_beir_folder
from evals_repro.cli import main
from evals_repro.providers import retry
from fakes.base import Reply
from fakes.voyage import FakeVoyage


def one_error_line(capsys) -> str:
    """The one `error:` line (a run also prints per-subset progress and failure lines); no traceback."""
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def bm25(tmp_path: Path, *extra: str) -> list[str]:
    return ["run", "bm25", "--benchmark", "sample", "--subsets", "heat-pumps", *extra]


def test_results_dir_that_is_a_file(tmp_path, capsys):
    blocker = tmp_path / "results"
    blocker.write_text("my notes\n")
    code = main(bm25(tmp_path, "--results-dir", str(blocker), "--cache-dir", str(tmp_path / "cache")))
    line = one_error_line(capsys)
    assert code == 2 and f"--results-dir {blocker}" in line and "it is a file" in line
    assert "move that file away or choose another path" in line
    assert blocker.read_text() == "my notes\n"  # nothing lost


def test_cache_dir_that_cannot_be_created(tmp_path, capsys):
    (tmp_path / "plain").write_text("x")
    cache = tmp_path / "plain" / "cache"
    code = main(bm25(tmp_path, "--results-dir", str(tmp_path / "results"), "--cache-dir", str(cache)))
    line = one_error_line(capsys)
    assert code == 2 and f"--cache-dir {cache}" in line and f"{tmp_path / 'plain'} is a file" in line
    assert not (tmp_path / "results").exists()  # refused before any work


def test_workers_zero_is_refused_before_any_request(tmp_path, capsys, monkeypatch):
    with FakeVoyage() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        args = ["run", "voyage-4-lite", "--benchmark", "sample", "--results-dir", str(tmp_path / "r")]
        code = main([*args, "--cache-dir", str(tmp_path / "c"), "--workers", "0"])
        assert fake.requests == []
    line = one_error_line(capsys)
    assert code == 2 and "'--workers'" in line and "greater than or equal to 1" in line


def test_workers_zero_in_library_options_is_refused(monkeypatch):
    from evals_repro.base.errors import UsageError
    from evals_repro.embedders.registry import build_embedder
    from evals_repro.retrieval.base import MethodContext

    monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
    with pytest.raises(UsageError, match="--workers 0 must be at least 1"):
        build_embedder("voyage-4-lite", MethodContext(benchmark="x", options={"workers": 0}))


def test_beir_qrels_with_one_pair_at_two_grades(tmp_path, capsys):
    folder = write_beir_folder(
        tmp_path / "mini",
        {"d1": "solar panels", "d2": "wind power"},
        {"q1": "solar"},
        [("q1", "d1", 1), ("q1", "d2", 0), ("q1", "d1", 2)],
    )
    code = main(
        ["run", "bm25", "--benchmark", folder, "--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")]
    )
    line = one_error_line(capsys)
    assert code != 0 and "test.tsv:4" in line and "line 2" in line and "q1" in line and "d1" in line
    assert "keep one grade per (query, page) pair" in line


def test_beir_qrels_repeating_a_pair_at_the_same_grade_is_fine(tmp_path, capsys):
    folder = write_beir_folder(tmp_path / "mini", {"d1": "solar panels"}, {"q1": "solar"}, [("q1", "d1", 1)] * 2)
    assert (
        main(
            [
                "run",
                "bm25",
                "--benchmark",
                folder,
                "--results-dir",
                str(tmp_path / "r"),
                "--cache-dir",
                str(tmp_path / "c"),
            ]
        )
        == 0
    )


def test_report_output_with_an_unknown_suffix(tmp_path, capsys):
    assert main(bm25(tmp_path, "--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c"))) == 0
    capsys.readouterr()
    target = tmp_path / "tables.unknown"
    code = main(["report", "--benchmark", "sample", "--results-dir", str(tmp_path / "r"), "-o", str(target)])
    line = one_error_line(capsys)
    assert code == 2 and "'.unknown'" in line and ".md, .csv" in line and "measure" not in line
    assert not target.exists()


def test_prepare_again_with_another_first_stage_says_what_changed(tmp_path, capsys):
    study = ["--study-dir", str(tmp_path / "study"), "--cache-dir", str(tmp_path / "cache")]
    base = ["rerank-study", "prepare", "--benchmark", "sample", "--subsets", "heat-pumps", *study]
    assert main([*base, "--first-stage", "bm25"]) == 0
    manifest = (tmp_path / "study" / "manifest.json").read_text()
    capsys.readouterr()
    code = main([*base, "--first-stage", "minilm"])
    line = one_error_line(capsys)
    assert code == 2 and "sample/heat-pumps was frozen with first stage bm25, not minilm" in line
    assert "rerun with --first-stage bm25" in line and "dataset changed" not in line
    assert (tmp_path / "study" / "manifest.json").read_text() == manifest  # nothing rewritten


def test_prepare_with_changed_data_says_the_data_changed(tmp_path, capsys):
    study = ["--study-dir", str(tmp_path / "study"), "--cache-dir", str(tmp_path / "cache")]
    base = ["rerank-study", "prepare", "--benchmark", "sample", "--subsets", "heat-pumps", *study]
    assert main(base) == 0
    path = tmp_path / "study" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["datasets"]["sample/heat-pumps"]["data_digest"] = "0" * 64
    path.write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(base) == 2
    line = one_error_line(capsys)
    assert "the data of sample/heat-pumps changed" in line and "same revision, different content" in line


def test_timeout_failures_advise_raising_the_timeout(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(retry, "BACKOFF_BASE", 0.01)
    with FakeVoyage() as fake:
        fake.script(*[Reply(200, sleep=1.0) for _ in range(2)])
        monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        args = ["run", "voyage-4-lite", "--benchmark", "sample", "--subsets", "heat-pumps"]
        code = main(
            [
                *args,
                "--results-dir",
                str(tmp_path / "r"),
                "--cache-dir",
                str(tmp_path / "c"),
                "--timeout",
                "0.2",
                "--max-attempts",
                "2",
            ]
        )
    line = one_error_line(capsys)
    assert code != 0 and "after 2 attempts" in line and "raise --timeout" in line and "--timeout 0.2s" in line
    assert "-tpm" not in line


def test_rate_limit_failures_advise_lowering_the_budget(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(retry, "BACKOFF_BASE", 0.01)
    with FakeVoyage() as fake:
        fake.fail(429, times=2, retry_after="0")
        monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        args = ["run", "voyage-4-lite", "--benchmark", "sample", "--subsets", "heat-pumps"]
        code = main(
            [*args, "--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c"), "--max-attempts", "2"]
        )
    line = one_error_line(capsys)
    assert code != 0 and "HTTP 429" in line and "lower --voyage-tpm/--voyage-rpm" in line and "--timeout" not in line

"""What a new user meets on the command line: Ctrl-C, output paths, options given twice or out of range.

Each test goes through `evals_repro.cli.main` with the arguments a user types, and checks the exit code, the
one `error:` line (no traceback) and that nothing already written is lost.
"""

from __future__ import annotations

from pathlib import Path

from beir_folder import write_beir_folder
from evals_repro.cli import main


def error_lines(capsys) -> list[str]:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("error: ")]


def two_subsets(tmp_path: Path) -> str:
    """A folder of two BEIR folders (one subset each) where BM25 ranks the judged page first."""
    root = tmp_path / "bench"
    for name, word in (("alpha", "solar"), ("beta", "wind")):
        write_beir_folder(
            root / name,
            {"d1": f"{word} power plants", "d2": "unrelated gardening notes"},
            {"q1": word},
            [("q1", "d1", 1)],
        )
    return str(root)


def run_args(tmp_path: Path, benchmark: str, *extra: str) -> list[str]:
    results, cache = str(tmp_path / "results"), str(tmp_path / "cache")
    return ["run", "bm25", "--benchmark", benchmark, "--results-dir", results, "--cache-dir", cache, *extra]


def test_ctrl_c_mid_run_says_so_keeps_finished_subsets_and_resume_skips_them(tmp_path, capsys, monkeypatch):
    from evals_repro import evaluation

    bench = two_subsets(tmp_path)
    real_load = evaluation.load_subset
    loaded: list[str] = []

    def load_then_ctrl_c(decl, name, options):
        loaded.append(name)
        if len(loaded) == 2:
            raise KeyboardInterrupt  # what SIGINT raises in the main thread
        return real_load(decl, name, options)

    monkeypatch.setattr(evaluation, "load_subset", load_then_ctrl_c)
    code = main(run_args(tmp_path, bench))
    err = capsys.readouterr().err
    assert code == 130
    assert "Traceback" not in err
    interrupted = [line for line in err.splitlines() if line.startswith("interrupted: ")]
    assert len(interrupted) == 1 and "rerun" in interrupted[0] and "--resume" in interrupted[0]
    first = tmp_path / "results" / "bench" / "bm25" / f"{loaded[0]}.json"
    assert first.is_file()
    assert not (tmp_path / "results" / "bench" / "bm25" / f"{loaded[1]}.json").exists()

    monkeypatch.setattr(evaluation, "load_subset", real_load)
    assert main(run_args(tmp_path, bench, "--resume")) == 0
    err = capsys.readouterr().err
    assert f"{loaded[0]}: complete result kept" in err
    assert f"{loaded[1]}: 1 queries" in err

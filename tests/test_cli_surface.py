"""The command-line surface: version, exit codes, help on every option, choices as enums, lists, file modes."""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from pathlib import Path

import pytest
import typer.main
import typer.rich_utils

from evals_repro.cli import app, main

ROOT = Path(__file__).resolve().parents[1]


def _commands(command, path: tuple[str, ...] = ()):
    """Every command and subcommand (typer vendors click, so groups are told by their methods)."""
    yield path, command
    if hasattr(command, "list_commands"):
        ctx = typer.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            yield from _commands(sub, (*path, name))


ALL_COMMANDS = list(_commands(typer.main.get_command(app)))


def test_version_prints_the_package_version(capsys):
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"evals-repro {declared}"


def test_every_option_and_argument_of_every_command_has_help():
    missing = [
        f"{' '.join(path) or '(root)'} {param.opts[0] if param.opts else param.name}"
        for path, command in ALL_COMMANDS
        for param in command.params
        if not (getattr(param, "help", None) or "").strip()
    ]
    assert len(ALL_COMMANDS) > 10 and missing == []


EXPECTED_EXIT_CODES = {0, 1, 2, 3, 4, 5, 130, 143}


def test_exit_codes_are_documented_in_help_and_readme(capsys):
    assert main(["--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = {int(code) for code in re.findall(r"^\| `(\d+)` \|", section, flags=re.M)}
    assert documented == EXPECTED_EXIT_CODES
    for code in EXPECTED_EXIT_CODES:
        assert re.search(rf"(Exit codes: |; ){code} ", help_text), code


def test_exit_codes_in_use(tmp_path, capsys):
    assert main(["run", "bm25", "-b", "sample", "--setting", "sideways"]) == 2  # usage
    assert main(["run", "bm25", "-b", "nowhere"]) == 2  # unknown name
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 1.0 x\n")
    assert main(["evaluate", "--qrels", str(tmp_path / "absent"), "--run", str(tmp_path / "run.txt")]) == 2  # data
    capsys.readouterr()


TIE_RULES = {"group-mean", "doc-id", "input-order"}
CHOICES = {
    ("run", "--setting"): {"monolingual", "crosslingual"},
    ("run", "--content"): {"markdown", "images"},
    ("run", "--tie-rule"): TIE_RULES,
    ("run", "--score-precision"): {"float32", "float64"},
    ("report", "--tie-rule"): TIE_RULES,
    ("report", "--by"): {"query_type", "query_format", "content_type", "relevant_pages"},
    ("evaluate", "--tie-rule"): TIE_RULES,
    ("evaluate", "--score-precision"): {"float32", "float64"},
    ("mixedbread-upload", "--parsing"): {"fast", "high_quality"},
    ("answer", "--context"): {"text", "images", "hybrid"},
}


@pytest.mark.parametrize("command,option", sorted(CHOICES))
def test_choices_are_enums_listed_in_help(command, option, capsys, monkeypatch):
    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", 400)  # one line per option, whatever the terminal
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert "<" + "|".join(sorted(CHOICES[(command, option)], key=lambda c: text.find(c))) + ">" in text
    assert main([command, *(["x"] if command == "run" else []), option, "bogus"]) == 2
    err = capsys.readouterr().err
    assert "bogus" in err and all(choice in err for choice in CHOICES[(command, option)])


def test_choices_match_the_library():
    from evals_repro.benchmarks.declaration import CONTENTS
    from evals_repro.cli import options
    from evals_repro.methods.pipeline import CONTENTS as PIPELINE_CONTENTS
    from evals_repro.metrics.protocol import SCORE_PRECISIONS, TIE_RULES
    from evals_repro.reporting.breakdown import FIELDS
    from evals_repro.reporting.significance import DEFAULT_SEED
    from evals_repro.runner.run_request import SETTINGS
    from evals_repro.stores.upload import PARSING
    from evals_repro.vidore_paper.pipeline import CONTEXTS

    assert [c.value for c in options.Setting] == list(SETTINGS)
    assert [c.value for c in options.Content] == list(CONTENTS) == list(PIPELINE_CONTENTS)
    assert [c.value for c in options.TieRule] == list(TIE_RULES)
    assert [c.value for c in options.ScorePrecision] == list(SCORE_PRECISIONS)
    assert [c.value for c in options.BreakdownField] == list(FIELDS)
    assert {c.value for c in options.Parsing} == set(PARSING)
    assert [c.value for c in options.AnswerContext] == list(CONTEXTS)
    assert options.SEED_DEFAULT == DEFAULT_SEED


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory):
    """BM25 on the sample, subsets given once comma-separated and once repeated."""
    root = tmp_path_factory.mktemp("surface")
    old = os.umask(0o022)
    try:
        common = ["-b", "sample", "--results-dir", str(root / "results"), "--cache-dir", str(root / "cache")]
        assert (
            main(["run", "bm25", *common, "-s", "heat-pumps,railway-maintenance", "-m", "ndcg_at_10,recall_at_5"]) == 0
        )
        assert main(["run", "bm25", *common, "-s", "clinical-trials", "-s", "heat-pumps", "--resume"]) == 0
        assert main(["report", "-b", "sample", "--results-dir", str(root / "results"), "-o", str(root / "t.md")]) == 0
    finally:
        os.umask(old)
    return root


def test_list_options_take_commas_and_repeats(sample_runs):
    written = sorted(p.name for p in (sample_runs / "results" / "sample" / "bm25").glob("*.json"))
    assert written == ["clinical-trials.json", "heat-pumps.json", "railway-maintenance.json"]
    first = json.loads((sample_runs / "results" / "sample" / "bm25" / "railway-maintenance.json").read_text())
    assert {"ndcg_at_10", "recall_at_5"} <= set(first["metrics"] if "metrics" in first else first["aggregate"])


def test_result_and_report_files_honour_the_umask(sample_runs):
    files = [*(sample_runs / "results").rglob("*.json"), sample_runs / "t.md"]
    assert len(files) >= 4
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {oct(0o644)}


def test_rcp_lists_take_commas_and_repeats(tmp_path, capsys):
    import rcp_fixture

    snapshot = rcp_fixture.write_snapshot(tmp_path / "release")
    base = ["rcp", "replay", "--snapshot", str(snapshot)]
    assert main([*base, "--domains", "hr,energy", "--languages", "english,french"]) == 0
    commas = capsys.readouterr().out
    assert (
        main([*base, "--domains", "hr", "--domains", "energy", "--languages", "english", "--languages", "french"]) == 0
    )
    assert capsys.readouterr().out == commas and "| Reranker | hr | energy | Mean |" in commas

"""Habits the suite keeps: CI runs every test that needs ../shared, and hard dependencies are imported, not skipped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import SHARED, shared_path

TESTS = Path(__file__).resolve().parent


def test_missing_shared_file_fails_under_ci_and_skips_elsewhere(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        shared_path("no-such-folder", "no-such-file")
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception):
        shared_path("no-such-folder", "no-such-file")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        shared_path("no-such-folder", "no-such-file")


def test_shared_is_found_from_this_checkout():
    """A worktree without ../shared sets EVALS_REPRO_SHARED; either way the trec_eval files must be there in CI."""
    if SHARED.is_dir():
        assert shared_path("data", "trec_eval").is_dir()


def test_no_importorskip_on_dependencies():
    """Every import a test needs is a declared (runtime or dev) dependency: a missing one is an error, not a skip."""
    offenders = [
        f"{path.relative_to(TESTS)}:{number}"
        for path in sorted(TESTS.rglob("*.py"))
        if path.name != Path(__file__).name
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"\bimportorskip\(", line)
    ]
    assert offenders == []

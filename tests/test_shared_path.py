"""`shared_path`: a missing ../shared file skips a test, except under CI=true, where it fails it."""

from __future__ import annotations

import pytest

from conftest import shared_path


def test_missing_shared_file_skips_locally(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no-such-file is not available"):
        shared_path("data", "no-such-file")


@pytest.mark.parametrize("value", ["true", "TRUE", " true "])
def test_missing_shared_file_fails_under_ci(monkeypatch, value):
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match="CI=true requires it"):
        shared_path("data", "no-such-file")


def test_present_shared_file_is_returned(monkeypatch):
    monkeypatch.setenv("CI", "false")
    path = shared_path("data")  # skips (not fails) where ../shared is absent and CI is not true
    assert path.is_dir()

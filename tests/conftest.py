"""Shared test fixtures. `../shared/` is optional: tests that read it skip cleanly without it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

os.environ.setdefault("EVALS_REPRO_NO_PROGRESS", "1")
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

# A fake Hugging Face Hub for the whole session (tests/fakehub.py). huggingface_hub and datasets
# read HF_ENDPOINT/HF_HOME/HF_HUB_OFFLINE once, at import, so this runs before any test imports them.
from fakehub import FakeHub, install_environment  # noqa: E402

FAKE_HUB = FakeHub()
FAKE_HUB_HOME = install_environment(FAKE_HUB)


@pytest.fixture(scope="session")
def fake_hub() -> FakeHub:
    """The session's fake Hub; add repos with `fake_hub.add_repo(repo_id, sha, files)`."""
    return FAKE_HUB


def shared_path(*parts: str) -> Path:
    """A file under ../shared, or skip the test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared/{'/'.join(parts)} is not available")
    return path


@pytest.fixture(autouse=True)
def fresh_provider_throttles():
    """Provider throttles are process-wide: give every test fresh budgets, so earlier tests never slow it."""
    from evals_repro.providers.throttle import reset_throttles

    reset_throttles()
    yield
    reset_throttles()


@pytest.fixture
def registered():
    """Register test components for one test: `registered(METHODS, "scripted", scripted_method.build)`."""
    added = []

    def add(registry, name, factory, **details):
        registry.register(name, **details)(factory)
        added.append((registry, name))

    yield add
    for registry, name in added:
        registry.unregister(name)

"""Shared test fixtures. `../shared/` is optional locally (tests that read it skip cleanly without it) but
required in CI: with CI=true a missing file fails the test instead of skipping it."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# EVALS_REPRO_SHARED points elsewhere (e.g. a worktree whose parent has no shared/).
SHARED = Path(os.environ.get("EVALS_REPRO_SHARED") or ROOT.parent / "shared")

os.environ.setdefault("EVALS_REPRO_NO_PROGRESS", "1")
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

# The environment as the user had it, before the fake Hub's variables below: for tests that start real
# tools needing the real Hub (tests/gpu).
ORIGINAL_ENVIRON = dict(os.environ)

# A fake Hugging Face Hub for the whole session (tests/fakehub.py). huggingface_hub and datasets
# read HF_ENDPOINT/HF_HOME/HF_HUB_OFFLINE once, at import, so this runs before any test imports them.
from fakehub import FakeHub, install_environment  # noqa: E402
from plugin_venv import venv  # noqa: E402, F401  (the session's plugin venv, tests/plugin_venv.py)

FAKE_HUB = FakeHub()
FAKE_HUB_HOME = install_environment(FAKE_HUB)

# ir_datasets reads IR_DATASETS_HOME when it is first imported (its datasets resolve their cache
# folders at import): one session folder, pre-filled by tests/text_fixtures.py, removed at exit.
IRDS_HOME = Path(tempfile.mkdtemp(prefix="evals-repro-irds-"))
atexit.register(shutil.rmtree, IRDS_HOME, ignore_errors=True)
os.environ["IR_DATASETS_HOME"] = str(IRDS_HOME)


@pytest.fixture(scope="session")
def fake_hub() -> FakeHub:
    """The session's fake Hub; add repos with `fake_hub.add_repo(repo_id, sha, files)`."""
    return FAKE_HUB


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def shared_path(*parts: str) -> Path:
    """A file under ../shared; absent, the test skips, or fails when CI=true (CI must run every test)."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        message = f"{SHARED}/{'/'.join(parts)} is not available"
        if in_ci():
            pytest.fail(
                f"{message}, and CI=true requires it: CI runs with shared/ beside the repository", pytrace=False
            )
        pytest.skip(message)
    return path


@pytest.fixture(autouse=True)
def fresh_provider_throttles():
    """Provider throttles, the cost ceiling, prices and token calibration are process-wide: every test starts
    fresh, so earlier tests never slow, stop or price it."""
    from evals_repro.providers import calibration
    from evals_repro.providers.ceiling import install_guard
    from evals_repro.providers.prices import reset_prices
    from evals_repro.providers.throttle import reset_throttles

    reset_throttles()
    calibration.reset()
    install_guard(None)
    reset_prices()
    yield
    reset_throttles()
    calibration.reset()
    install_guard(None)
    reset_prices()


@pytest.fixture(scope="session")
def irds_home() -> Path:
    """The session's IR_DATASETS_HOME, filled with the msmarco-passage / TREC DL fixture."""
    from text_fixtures import fill_irds_home

    fill_irds_home(IRDS_HOME)
    return IRDS_HOME


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


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A rerank study prepared once per test module (BM25 over the sample's two subsets); `study` gives each test
    its own copy. A module that needs another preparation defines its own `prepared`."""
    from study_fixtures import prepare_sample

    return prepare_sample(tmp_path_factory.mktemp("prepared"))


@pytest.fixture
def study(prepared, tmp_path):
    from study_fixtures import copy_study

    return copy_study(prepared, tmp_path)

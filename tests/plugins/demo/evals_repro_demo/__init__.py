"""A demo evals-repro plugin (installed by tests/test_plugins.py into a throwaway venv)."""

from pathlib import Path

# Entry point `evals_repro.benchmarks`: a folder of declarations (relative paths resolve against it).
BENCHMARKS = Path(__file__).parent / "benchmarks"

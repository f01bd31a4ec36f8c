"""Benchmark declarations (top-level `benchmarks/*.toml`), their registry and loaders.

Layer: sources. May import base only; read by every layer above.
"""

from .declaration import BenchmarkDeclaration, LoadOptions, SubsetDeclaration
from .registry import benchmarks_dir, get_benchmark, list_benchmarks, load_subset

__all__ = [
    "BenchmarkDeclaration",
    "LoadOptions",
    "SubsetDeclaration",
    "benchmarks_dir",
    "get_benchmark",
    "list_benchmarks",
    "load_subset",
]

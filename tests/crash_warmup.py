"""Preloaded by the crash trials' forkserver only: compile/load what every child would otherwise load
again (numba kernels of the exact index, metrics), so a trial child costs its own work."""

from __future__ import annotations

import numpy as np

from evals_repro import metrics as M
from evals_repro.retrieval.exact import ExactIndex

_vectors = np.eye(4, dtype=np.float32)
ExactIndex(_vectors, ["a", "b", "c", "d"]).search_ids(_vectors[:2], 2)
M.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 0.5}}, list(M.DEFAULT_MEASURES))

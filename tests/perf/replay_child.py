"""One replay of a synthetic release in a fresh process (test_rcp_replay_perf.py): wall and CPU time, peak RSS (JSON)."""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

from evals_repro.benchmarks.rcp_release import Release
from evals_repro.rcp.replay import replay

folder = Path(sys.argv[1])
start, cpu = time.perf_counter(), time.process_time()
result = replay(Release(snapshot=folder))
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
cells = sum(1 for _ in result.means)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_rss": peak, "means": cells, "models": len(result.models)}))

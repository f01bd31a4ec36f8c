"""Figures read from the user's own result records (`results/<benchmark>/<method>/<subset>.json`): an anchor's
figure for the same method on the same benchmark, shown beside ours."""

from __future__ import annotations

from pathlib import Path

from .figures import Source
from .matrix import Outcome


def outcomes(source: Source, results_dir: Path, ran: dict[str, Outcome]) -> dict[str, Outcome]:
    from ..records.results import read_record, result_path

    out: dict[str, Outcome] = {}
    for fig in source.figures:
        if fig.route != "results":
            continue
        assert fig.benchmark and fig.method and fig.subset and fig.measure
        path = result_path(results_dir, fig.benchmark, fig.method, fig.subset)
        record = read_record(path) if path.is_file() else None
        score = None if record is None else record.score(fig.view or "monolingual", fig.measure)
        if record is None or score is None:
            out[fig.id] = ran.get(fig.method) or Outcome(not_run=f"free: `{fig.command}`")
            continue
        revision = record.source.get("revision")
        note = f"ours: {path}" + (f" at data revision {str(revision)[:8]}" if revision else "")
        out[fig.id] = Outcome(100 * score, note=note)
    return out

"""trec_eval's text output: `measure<TAB>qid<TAB>value`, the name padded to 22 characters, 4 decimals.

With `trec_names` the lines carry trec_eval's measure names, so our output diffs cleanly
against `trec_eval -c [-q]` for the measures both compute.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .base import get_measure
from .evaluate import mean


def _line(name: str, qid: str, value: str) -> str:
    return f"{name:<22s}\t{qid}\t{value}"


def trec_eval_lines(
    per_query: Mapping[str, Mapping[str, float]],
    measures: Sequence[str],
    *,
    per_query_lines: bool = False,
    trec_names: bool = False,
) -> list[str]:
    """Per-query lines (qid ascending) when asked, then `num_q` and the `all` means."""
    shown = {name: (get_measure(name).trec_name if trec_names else name) for name in measures}
    lines: list[str] = []
    if per_query_lines:
        for qid in sorted(per_query):
            lines.extend(_line(shown[name], qid, f"{per_query[qid][name]:.4f}") for name in measures)
    lines.append(_line("num_q", "all", str(len(per_query))))
    means = mean(per_query)
    lines.extend(_line(shown[name], "all", f"{means[name]:.4f}") for name in measures)
    return lines

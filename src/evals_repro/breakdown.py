"""Scores by query metadata (`report --by FIELD`), from the per-query metrics of result files.

A query counts once in every group its field names: `query_type` and `content_type` are lists
(a multi-hop numerical question counts under both), the others single values. The mean of a
group is over its queries (micro average across the given subsets and languages), so a row
reads "queries of this kind score X on average".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .errors import UsageError, choices

# report field -> metadata key written by the loaders (ViDoRe's column is `query_types`).
FIELDS = {
    "query_type": "query_types",
    "query_format": "query_format",
    "content_type": "content_type",
    "relevant_pages": "relevant_pages",
}
MISSING = "(none)"


@dataclass(frozen=True)
class BreakdownRow:
    value: str
    queries: int
    mean: float


def _values(metadata: dict[str, Any], key: str) -> list[str]:
    value = metadata.get(key)
    if value is None or value == [] or value == "":
        return [MISSING]
    if isinstance(value, (list, tuple)):
        return sorted({str(v) for v in value})
    return [str(value)]


def _order(value: str) -> tuple:
    """Numbers numerically (relevant_pages 2 before 10), then text, `(none)` last."""
    if value == MISSING:
        return (2, 0, value)
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0, value)


def breakdown(results: Iterable[dict[str, Any]], field: str, measure: str = "ndcg_at_10") -> list[BreakdownRow]:
    """Rows (value, query count, mean `measure`) over every per-query entry of `results`."""
    if field not in FIELDS:
        raise UsageError(f"--by '{field}' is not a breakdown field", f"choose from {choices(FIELDS)}")
    key = FIELDS[field]
    groups: dict[str, list[float]] = {}
    seen_measures: set[str] = set()
    for result in results:
        for entry in (result.get("per_query") or {}).values():
            metrics = entry.get("metrics") or {}
            seen_measures.update(metrics)
            if measure not in metrics:
                continue
            for value in _values(entry.get("metadata") or {}, key):
                groups.setdefault(value, []).append(float(metrics[measure]))
    if seen_measures and measure not in seen_measures:
        raise UsageError(
            f"measure '{measure}' is not in the per-query results", f"choose from {choices(sorted(seen_measures))}"
        )
    return [
        BreakdownRow(value, len(scores), sum(scores) / len(scores))
        for value, scores in sorted(groups.items(), key=lambda item: _order(item[0]))
    ]


def breakdown_markdown(rows: list[BreakdownRow], field: str, measure: str, title: str = "", decimals: int = 1) -> str:
    """A markdown table: one row per metadata value, its query count and mean score x100."""
    lines = [f"### {title}", ""] if title else []
    lines += [f"| {field} | queries | {measure} (x100) |", "|---|---:|---:|"]
    for row in rows:
        lines.append(f"| {row.value} | {row.queries} | {row.mean * 100:.{decimals}f} |")
    if not rows:
        lines.append("| (no per-query results) | | |")
    return "\n".join(lines) + "\n"


def breakdown_report(
    results_dir,
    benchmark: str,
    field: str,
    measure: str = "ndcg_at_10",
    first_stage_only: bool = False,
    decimals: int = 1,
    tie_rule: str | None = None,
) -> str:
    """One breakdown table per method with results for `benchmark` (what `report --by` prints);
    given a tie rule, results computed with another one are left out."""
    from .report import tie_rule_of
    from .results import scan_results

    stored = scan_results(results_dir, benchmark)
    if first_stage_only:
        stored = [r for r in stored if not r.data.get("reranked")]
    if tie_rule is not None:
        stored = [r for r in stored if tie_rule_of(r) in (None, tie_rule)]
    by_method: dict[str, list[dict[str, Any]]] = {}
    for item in stored:
        by_method.setdefault(item.method, []).append(item.data)
    if not by_method:
        return breakdown_markdown([], field, measure, f"{benchmark} — by {field}", decimals)
    parts = []
    for method in sorted(by_method):
        results = by_method[method]
        settings = "/".join(sorted({str(r.get("setting")) for r in results}))
        subsets = ", ".join(sorted(str(r.get("subset")) for r in results))
        title = f"{benchmark} — {method} — {settings} — by {field} ({subsets})"
        parts.append(breakdown_markdown(breakdown(results, field, measure), field, measure, title, decimals))
    return "\n".join(parts)

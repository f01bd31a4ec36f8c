"""What the HTML reports say in words: a setting's value as a reader reads it, the scoring protocol's fields
explained value by value, and one sentence for each kind of table a page shows.

Its own module beside `html_report.py` (which lays the page out): the words change with the protocol and the
tables, the layout with the page.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any


def readable(value: Any) -> str:
    """A setting as a reader reads it: yes / no, "none", lists joined, mappings as `key: value` pairs (never
    Python's `True`, `None` or `{'k': 1}`)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {readable(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple, set)):
        return ", ".join(readable(v) for v in value) or "none"
    return str(value)


# What each scoring-protocol field of a result means, value by value (`metrics.protocol.ScoringProtocol`).
PROTOCOL_FIELDS: dict[str, tuple[str, Any]] = {
    "tie_rule": (
        "tied scores (RCP-nDCG, float gains)",
        {
            "group-mean": "group-mean: tied documents share their group's mean gain (the rcp-ndcg paper's rule)",
            "doc-id": "doc-id: ties broken by document id, as trec_eval",
            "input-order": "input-order: ties kept in the run's order",
        },
    ),
    "score_precision": (
        "score precision",
        {
            "float32": "float32: scores rounded to float32 before ranking, as trec_eval 9.x and pytrec_eval",
            "float64": "float64: scores ranked at full precision, as trec_eval 10.x",
        },
    ),
    "relevance_level": ("relevance level", lambda v: f"a document is relevant at grade {v} or more (trec_eval -l {v})"),
    "max_results": (
        "results per query",
        lambda v: "every retrieved document" if v is None else f"the top {v} (trec_eval -M {v})",
    ),
    "judged_only": (
        "unjudged documents",
        lambda v: "dropped before scoring (trec_eval -J)" if v else "kept, counted as not relevant",
    ),
    "complete": (
        "queries without results",
        lambda v: "count, scoring 0 (trec_eval -c)" if v else "left out of the means",
    ),
    "ignore_identical_ids": (
        "a document with the query's own id",
        lambda v: "dropped before scoring (mteb / BEIR)" if v else "kept",
    ),
}


def protocol_value(key: str, value: Any) -> tuple[str, str]:
    """A scoring-protocol field as the HTML report names it and its value in words."""
    label, words = PROTOCOL_FIELDS.get(key, (key.replace("_", " "), None))
    if callable(words):
        return label, words(value)
    if isinstance(words, dict) and value in words:
        return label, words[value]
    return label, readable(value)


def scoring_rows(records: Sequence[Any]) -> list[tuple[str, str]]:
    """Each scoring-protocol field of the results, in words; a field the results disagree on lists each value with
    the methods that used it."""
    rows = []
    keys = list(dict.fromkeys(k for r in records for k in r.protocol if k != "measures"))
    for key in keys:
        by_value: dict[str, list[str]] = {}
        label = key
        for r in sorted(records, key=lambda r: r.method):
            label, text = protocol_value(key, r.protocol.get(key))
            methods = by_value.setdefault(text, [])
            if r.method not in methods:
                methods.append(r.method)
        if len(by_value) == 1:
            rows.append((f"scoring: {label}", next(iter(by_value))))
        else:
            rows.append((f"scoring: {label}", "; ".join(f"{t} ({', '.join(m)})" for t, m in by_value.items())))
    return rows


SETTINGS = (  # (what a table's title says, one sentence on what it is), beside the tables of the HTML report
    (
        "— monolingual —",
        "Monolingual",
        "each subset is scored on its queries in the language its documents are written in (its native language).",
    ),
    (
        "— crosslingual —",
        "Crosslingual",
        "each subset is scored on its queries in every query language of the benchmark, and the per-language means "
        "are averaged, each language weighing the same.",
    ),
    (
        "native-language view",
        "Native-language view",
        "each domain is scored on its questions in the language they were written in.",
    ),
    (
        "-language mean view",
        "Language-mean view",
        "each domain's mean over its query-language subsets, then the mean over domains.",
    ),
)


def reading_guide(titles: Sequence[str]) -> str:
    """One sentence per kind of table the page shows: what its scores are."""
    items = "".join(
        f"<dt>{html.escape(name)}</dt><dd>{html.escape(sentence)}</dd>"
        for key, name, sentence in SETTINGS
        if any(key in title for title in titles)
    )
    return f'<dl class="reading">{items}</dl>' if items else ""

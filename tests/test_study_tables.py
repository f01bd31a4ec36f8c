"""The study report's quality tables bold each column's best value as printed, as `report` does
(reporting.report.best_cells, its rule line under the table), the first stage ranked with the models; the latency
tables bold nothing (`report` bolds the highest value only, and never a measure with no better side).

The study below is constructed by hand, and which cells are bold is worked out here from its numbers:

- b1 (group g1), ndcg_at_10: s1 first stage 0.5, alpha 0.72312, beta 0.72284: alpha and beta both print 72.3
  and are both bold; s2 first stage 0.6, alpha 0.4, beta unscored: the first stage's 60.0 is bold; mean
  first stage 0.55, alpha 0.56156, beta blank: alpha's 56.2 is bold.
- b1, judged_at_10 (a diagnostic, no better side): nothing bold, no rule line.
- b2 (group g2), ndcg_at_10: only the first stage scored s3 (0.3): a single value is not ranked.
- Overall: g1 is b1's ndcg_at_10 mean (alpha's 56.2 bold), g2 has one value (30.0), overall one value (42.5).
"""

from __future__ import annotations

from evals_repro.reporting.html_report import markdown_to_html
from evals_repro.reporting.report import BOLD_RULE
from evals_repro.study.quality_table import benchmark_markdown, quality_markdown
from evals_repro.study.report import render_markdown


def row(group: str, measures: list[str], scores: dict[str, dict[str, float | None]]) -> dict:
    return {
        "queries": 3,
        "first_stage": "bm25",
        "group": group,
        "measure": "ndcg_at_10",
        "measures": measures,
        "scores": scores,
        "per_query": {},
        "truncated_documents": {},
    }


def constructed() -> dict:
    both = ["ndcg_at_10", "judged_at_10"]
    return {
        "models": ["alpha", "beta"],
        "groups": ["g1", "g2"],
        "benchmarks": {
            "b1": {
                "s1": row(
                    "g1",
                    both,
                    {
                        "first stage": {"ndcg_at_10": 0.5, "judged_at_10": 0.9},
                        "alpha": {"ndcg_at_10": 0.72312, "judged_at_10": 0.95},
                        "beta": {"ndcg_at_10": 0.72284, "judged_at_10": 0.97},
                    },
                ),
                "s2": row(
                    "g1",
                    both,
                    {
                        "first stage": {"ndcg_at_10": 0.6, "judged_at_10": 0.8},
                        "alpha": {"ndcg_at_10": 0.4, "judged_at_10": 0.85},
                        "beta": {"ndcg_at_10": None, "judged_at_10": None},
                    },
                ),
            },
            "b2": {
                "s3": row(
                    "g2",
                    ["ndcg_at_10"],
                    {"first stage": {"ndcg_at_10": 0.3}, "alpha": {"ndcg_at_10": None}, "beta": {"ndcg_at_10": None}},
                )
            },
        },
    }


def table(lines: list[str], title: str) -> list[str]:
    """The table under `title`: its header, rule and rows, then what follows up to the next heading."""
    start = lines.index(title)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    return lines[start + 2 : end]


def test_overall_table_bolds_each_columns_best_printed_value_with_reports_rule():
    lines = quality_markdown(constructed(), marks={("alpha", "g1"): " ▲"})
    assert lines[2:] == [
        "| model | g1 | g2 | overall |",
        "|---|---:|---:|---:|",
        "| first stage | 55.0 | 30.0 | 42.5 |",
        "| alpha | **56.2** ▲ |  |  |",  # the comparison's marker after the bold value, as in `report`
        "| beta |  |  |  |",
        "",
        BOLD_RULE,
        "",
        "Headline measure per group: g1: ndcg_at_10; g2: ndcg_at_10.",
    ]
    assert BOLD_RULE == "Bold: each column's best value as printed; every method tied at it is bold."


def test_benchmark_tables_bold_ties_at_the_printed_value_and_no_diagnostic():
    quality = constructed()
    lines = benchmark_markdown(quality, "b1")
    assert table(lines, "### ndcg_at_10 (x100)") == [
        "| model | s1 | s2 | mean |",
        "|---|---:|---:|---:|",
        "| first stage | 50.0 | **60.0** | 55.0 |",
        "| alpha | **72.3** | 40.0 | **56.2** |",
        "| beta | **72.3** |  |  |",
        "",
        BOLD_RULE,
        "",
    ]
    judged = table(lines, "### judged_at_10 (x100)")
    assert judged[2:5] == [
        "| first stage | 90.0 | 80.0 | 85.0 |",
        "| alpha | 95.0 | 85.0 | 90.0 |",
        "| beta | 97.0 |  |  |",
    ]
    assert BOLD_RULE not in judged  # no better side: nothing bold, no rule
    single = benchmark_markdown(quality, "b2")
    assert "**" not in "\n".join(single) and BOLD_RULE not in single  # one value per column: nothing to rank


def latency_entry(mean: float) -> dict:
    stat = {"estimate": mean, "low": mean - 1, "high": mean + 1}
    return {
        "benchmarks": {
            bench: {
                "summary": {"n_calls": {"estimate": 6}, "mean": stat, "p50": stat, "p90": stat, "p95": stat},
                "coverage": {"planned": 6, "recorded": 6, "retried_excluded": 0},
                "repeat_check": {
                    "pairs": 3,
                    "first_median": mean,
                    "repeat_median": mean,
                    "ratio": 1.0,
                    "low": 0.9,
                    "high": 1.1,
                    "verdict": "no repeat speed-up",
                },
            }
            for bench in ("b1", "b2")
        },
        "pooled": {"p50": stat},
        "pooled_note": "complete suite from one host location",
    }


def test_the_report_bolds_its_quality_tables_only_and_html_shows_them_strong():
    latency = {"models": {"alpha": latency_entry(120.0), "beta": latency_entry(80.0)}}
    text = render_markdown(constructed(), latency)
    lines = text.splitlines()
    assert lines.count(BOLD_RULE) == 2  # under the overall table and b1's ndcg_at_10 table
    latency_lines = [line for line in lines if line.startswith(("| alpha | 6 |", "| beta | 6 |"))]
    assert len(latency_lines) == 4 and "**" not in "\n".join(latency_lines)
    assert "**" not in text.split("## Pooled latency")[1]
    html = markdown_to_html(text)
    assert html.count("<strong>72.3</strong>") == 2 and "<strong>60.0</strong>" in html

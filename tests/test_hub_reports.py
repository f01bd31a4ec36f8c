"""`run`/`report` on the ViDoRe v3 fixture through the fake Hub, with numbers computed by hand.

The scripted method returns, per query id, the page list below; nDCG@10 uses trec_eval's
linear gains: DCG = sum(grade / log2(rank + 1)).
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

import hub_fixtures as fx
import scripted_method
from evals_repro.base.errors import UsageError
from evals_repro.base.registry import METHODS
from evals_repro.benchmarks import hub as hub_access
from evals_repro.cli import main
from evals_repro.records.results import QueryEntry
from evals_repro.reporting.breakdown import MISSING, BreakdownRow, breakdown, breakdown_markdown

LEAVE = {"0": 2, "2": 1}  # hr qrels of the "leave" question, every language
TRAINING = {"3": 2, "4": 1, "1": 1}

# query id -> (pages returned, in rank order)
SCRIPT = {
    "0": ["0", "2"],  # english leave: ideal
    "2": ["3", "1"],  # english training: misses page 4
    "1": ["2", "0"],  # french leave: swapped
    "7": ["0", "3"],  # french training: grade 2 at rank 2 only
    "3": ["0"],  # spanish leave
    "11": [],  # spanish training: nothing returned, scores 0 and counts
    "5": ["1", "0"],  # german leave
    "4": ["3"],  # german training
    "6": ["0", "2"],  # italian leave: ideal
    "9": ["3", "4", "1"],  # italian training: ideal
    "10": [],  # portuguese leave
    "8": ["4"],  # portuguese training
}


def dcg(grades: list[int]) -> float:
    return sum(g / math.log2(rank + 2) for rank, g in enumerate(grades))


def ndcg10(qid: str) -> float:
    question = next(q for i, q, _ in fx.HR_QUERY_ROWS if str(i) == qid)
    qrels = LEAVE if question == "leave" else TRAINING
    ideal = dcg(sorted(qrels.values(), reverse=True))
    return dcg([qrels.get(page, 0) for page in SCRIPT[qid][:10]]) / ideal


# By hand, from the gains above (1/log2(3) = 0.63093, 1/log2(4) = 0.5):
HAND = {
    "0": 1.0,
    "2": (2 + 0.6309297535714574) / (2 + 0.6309297535714574 + 0.5),
    "1": (1 + 2 * 0.6309297535714574) / (2 + 0.6309297535714574),
    "7": 2 * 0.6309297535714574 / 3.1309297535714574,
    "3": 2 / 2.6309297535714574,
    "11": 0.0,
    "5": 2 * 0.6309297535714574 / 2.6309297535714574,
    "4": 2 / 3.1309297535714574,
    "6": 1.0,
    "9": 1.0,
    "10": 0.0,
    "8": 1 / 3.1309297535714574,
}
LANGUAGE_OF = {str(i): lang for i, _, lang in fx.HR_QUERY_ROWS}
QUESTION_OF = {str(i): q for i, q, _ in fx.HR_QUERY_ROWS}


def language_mean(language: str) -> float:
    values = [HAND[q] for q, lang in LANGUAGE_OF.items() if lang == language]
    return sum(values) / len(values)


def question_mean(question: str) -> float:
    values = [HAND[q] for q, name in QUESTION_OF.items() if name == question]
    return sum(values) / len(values)


@pytest.fixture(scope="session")
def hub(fake_hub):
    return fx.install(fake_hub)


def test_hand_values_match_the_formula():
    """The hand values and the formula agree, so neither silently drifts."""
    for qid in SCRIPT:
        assert ndcg10(qid) == pytest.approx(HAND[qid], abs=1e-12)


@pytest.fixture
def scripted(monkeypatch, registered):
    registered(METHODS, "scripted", scripted_method.build)
    monkeypatch.setattr(scripted_method, "SCRIPT", SCRIPT)
    monkeypatch.setattr(scripted_method, "FAIL_ON_SUBSET", set())


def run_hr(tmp_path, setting: str, method: str = "scripted") -> dict:
    code = main(
        [
            "run",
            method,
            "--benchmark",
            "vidore-v3",
            "--subsets",
            "hr",
            "--setting",
            setting,
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--measure",
            "ndcg_at_10",
        ]
    )
    assert code == 0
    return json.loads((tmp_path / "results" / "vidore-v3" / method / "hr.json").read_text())


def test_crosslingual_per_language_and_breakdown_by_hand(hub, scripted, tmp_path, capsys):
    result = run_hr(tmp_path, "crosslingual")
    assert result["source"]["revision"] == fx.HR_EVAL_SHA and result["source"]["repo"] == fx.HR_REPO
    assert result["n_queries"] == 12
    for language in fx.LANGUAGES:
        block = result["languages"][language]
        assert block["n_queries"] == 2
        assert block["metrics"]["ndcg_at_10"] == pytest.approx(language_mean(language))
    crosslingual = sum(language_mean(lang) for lang in fx.LANGUAGES) / 6
    assert result["metrics"]["ndcg_at_10"] == pytest.approx(crosslingual)
    assert result["per_query"]["7"]["language"] == "french"
    assert result["per_query"]["7"]["metadata"]["relevant_pages"] == 3

    capsys.readouterr()
    assert main(["report", "--benchmark", "vidore-v3", "--results-dir", str(tmp_path / "results")]) == 0
    text = capsys.readouterr().out
    mono_line, cross_line = [line for line in text.splitlines() if line.startswith("| scripted |")]
    # Cells: "", method, then the 8 subsets (hr is 5th) and avg, empty for a partial suite. (a partial suite has no comparable mean).
    assert mono_line.split("|")[6].strip() == f"{language_mean('english') * 100:.1f}"
    assert cross_line.split("|")[6].strip() == f"{crosslingual * 100:.1f}"

    rows = {
        field: capsys_report(tmp_path, capsys, field)
        for field in ("query_type", "query_format", "content_type", "relevant_pages")
    }
    leave, training = question_mean("leave"), question_mean("training")
    assert rows["query_type"] == [("extractive", 6, leave), ("numerical", 6, leave), ("open-ended", 6, training)]
    assert rows["query_format"] == [("keyword", 6, training), ("question", 6, leave)]
    assert rows["content_type"] == [("Chart", 6, training), ("Table", 6, training), ("Text", 6, leave)]
    assert rows["relevant_pages"] == [("2", 6, leave), ("3", 6, training)]


def capsys_report(tmp_path, capsys, field) -> list[tuple[str, int, float]]:
    """`report --by FIELD` rows, parsed back from the printed markdown (x100, one decimal)."""
    capsys.readouterr()
    assert (
        main(
            [
                "report",
                "--benchmark",
                "vidore-v3",
                "--by",
                field,
                "--decimals",
                "4",
                "--results-dir",
                str(tmp_path / "results"),
            ]
        )
        == 0
    )
    # One table per setting: the crosslingual one holds every language's queries.
    (table,) = [t for t in capsys.readouterr().out.split("### ") if " — crosslingual — " in t.split("\n")[0]]
    lines = [line for line in table.splitlines() if line.startswith("| ")][1:]
    parsed = []
    for line in lines:
        value, count, score = [cell.strip() for cell in line.strip("|").split("|")]
        parsed.append((value, int(count), pytest.approx(float(score) / 100, abs=1e-6)))
    return parsed


def test_monolingual_scores_english_only(hub, scripted, tmp_path):
    result = run_hr(tmp_path, "monolingual")
    assert list(result["languages"]) == ["english"] and result["n_queries"] == 2
    assert result["metrics"]["ndcg_at_10"] == pytest.approx((HAND["0"] + HAND["2"]) / 2)
    assert sorted(result["per_query"]) == ["0", "2"]


def test_run_without_hub_is_one_line(hub, scripted, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(hub_access, "_RESOLVED", {})
    hub.stop()
    try:
        code = main(
            [
                "run",
                "scripted",
                "--benchmark",
                "vidore-v3",
                "--subsets",
                "hr",
                "--results-dir",
                str(tmp_path / "results"),
            ]
        )
    finally:
        hub.start()
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("error: cannot reach the Hugging Face Hub")
    assert f"{fx.HR_REPO}@{fx.HR_EVAL_SHA}" in err and "HF_ENDPOINT" in err and "HF_HUB_OFFLINE=1" in err
    assert not (tmp_path / "results" / "vidore-v3" / "scripted" / "hr.json").exists()


def test_bm25_run_and_report(hub, tmp_path, capsys):
    result = run_hr(tmp_path, "monolingual", method="bm25")
    assert result["n_queries"] == 2 and list(result["languages"]) == ["english"]
    capsys.readouterr()
    assert main(["report", "--benchmark", "vidore-v3", "--results-dir", str(tmp_path / "results")]) == 0
    text = capsys.readouterr().out
    assert "monolingual" in text and "crosslingual" in text and "| bm25 |" in text
    code = main(
        [
            "run",
            "bm25",
            "--benchmark",
            "vidore-v3",
            "--subsets",
            "hr",
            "--content",
            "images",
            "--results-dir",
            str(tmp_path / "results"),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1 and "images" in err


# -- breakdown on hand-written result dicts ----------------------------------------------------
def entry(value: float, **metadata) -> QueryEntry:
    return QueryEntry(language="english", metadata=metadata, metrics={"ndcg_at_10": value, "p_at_1": 1.0})


RESULTS = [  # breakdown reads only the records' per-query entries
    SimpleNamespace(
        per_query={
            "a": entry(1.0, query_type=["numerical", "multi-hop"], relevant_pages=10),
            "b": entry(0.5, query_type=["numerical"], relevant_pages=2),
        }
    ),
    SimpleNamespace(per_query={"c": entry(0.0, query_type=[], relevant_pages=2, query_format="keyword")}),
]


def test_list_valued_fields_count_a_query_in_each_group():
    assert breakdown(RESULTS, "query_type") == [
        BreakdownRow("multi-hop", 1, 1.0),
        BreakdownRow("numerical", 2, 0.75),
        BreakdownRow(MISSING, 1, 0.0),
    ]


def test_numeric_values_sort_as_numbers_and_missing_is_a_group():
    assert breakdown(RESULTS, "relevant_pages") == [BreakdownRow("2", 2, 0.25), BreakdownRow("10", 1, 1.0)]
    assert breakdown(RESULTS, "query_format", "p_at_1") == [
        BreakdownRow("keyword", 1, 1.0),
        BreakdownRow(MISSING, 2, 1.0),
    ]


def test_breakdown_markdown_renders_counts_and_scores():
    text = breakdown_markdown([BreakdownRow("numerical", 2, 0.75)], "query_type", "ndcg_at_10", "t")
    assert "| query_type | queries | ndcg_at_10 (x100) |" in text and "| numerical | 2 | 75.0 |" in text


@pytest.mark.parametrize(
    "field, measure, needle",
    [
        ("query_kind", "ndcg_at_10", "choose from query_type, query_format, content_type, relevant_pages"),
        ("query_type", "ndcg_at_5", "choose from ndcg_at_10, p_at_1"),
    ],
)
def test_breakdown_bad_field_or_measure_is_a_usage_error(field, measure, needle):
    with pytest.raises(UsageError) as caught:
        breakdown(RESULTS, field, measure)
    assert needle in caught.value.one_line()

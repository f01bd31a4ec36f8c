"""Diversity measures (ndeval through pyndeval) against the published pyndeval/ndeval vectors.

`../shared/data/ndeval/pyndeval_readme.*` is pyndeval's README example; the expected values are
the published ones (4 decimals, truncated): tolerance 1e-4.
"""

from __future__ import annotations

import json
import math

import pytest

from conftest import shared_path
from evals_repro import metrics as M
from evals_repro.base.errors import UsageError
from evals_repro.metrics.published.diversity import (
    alpha_ndcg_at_k,
    diversity_per_query,
    err_ia_at_k,
    qrels_from_subtopics,
    read_subtopic_qrels,
)

OURS = {  # our name -> ndeval's
    "alpha_ndcg_at_5": "alpha-nDCG@5",
    "alpha_ndcg_at_10": "alpha-nDCG@10",
    "alpha_ndcg_at_20": "alpha-nDCG@20",
    "alpha_dcg_at_5": "alpha-DCG@5",
    "alpha_dcg_at_10": "alpha-DCG@10",
    "alpha_dcg_at_20": "alpha-DCG@20",
    "err_ia_at_5": "ERR-IA@5",
    "err_ia_at_10": "ERR-IA@10",
    "err_ia_at_20": "ERR-IA@20",
    "nerr_ia_at_5": "nERR-IA@5",
    "nerr_ia_at_10": "nERR-IA@10",
    "nerr_ia_at_20": "nERR-IA@20",
    "p_ia_at_5": "P-IA@5",
    "p_ia_at_10": "P-IA@10",
    "p_ia_at_20": "P-IA@20",
    "strec_at_5": "strec@5",
    "strec_at_10": "strec@10",
    "strec_at_20": "strec@20",
    "nrbp": "NRBP",
    "nnrbp": "nNRBP",
    "map_ia": "MAP-IA",
}


def vectors():
    folder = shared_path("data", "ndeval")
    expected = json.loads((folder / "pyndeval_readme.expected.json").read_text())
    subtopics = read_subtopic_qrels(folder / "pyndeval_readme.qrels")
    run = M.read_trec_run(folder / "pyndeval_readme.run")
    return subtopics, run, expected


def test_function_api_matches_published_values():
    subtopics, run, expected = vectors()
    assert subtopics == {"0": {"a": {"A": 1}, "b": {"B": 1, "D": 1}, "c": {"C": 1}}}
    published = expected["expected"]
    values = diversity_per_query(subtopics, run, list(published))
    for name, value in published.items():
        assert values["0"][name] == pytest.approx(value, abs=1e-4), name
    assert alpha_ndcg_at_k(subtopics, run, 10)["0"] == pytest.approx(0.7868, abs=1e-4)
    assert err_ia_at_k(subtopics, run, 20)["0"] == pytest.approx(0.3907, abs=1e-4)


def test_evaluate_family_matches_published_values():
    subtopics, run, expected = vectors()
    qrels = qrels_from_subtopics(subtopics)
    assert qrels == {"0": {"A": 1, "B": 1, "D": 1, "C": 1}}
    scores = M.evaluate(qrels, run, list(OURS) + ["p_at_5"], subtopics=subtopics)
    for ours, theirs in OURS.items():
        assert scores["0"][ours] == pytest.approx(expected["expected"][theirs], abs=1e-4), ours
    assert scores["0"]["p_at_5"] == pytest.approx(3 / 5)  # A, D, B relevant in the top 5


def test_judged_queries_without_results_or_relevant_documents_score_zero():
    subtopics = {"q1": {"s1": {"a": 1}, "s2": {"b": 1}}, "q2": {"s1": {"c": 0}}, "q3": {"s1": {"d": 1}}}
    run = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0}, "q9": {"z": 1.0}}
    values = diversity_per_query(subtopics, run, ["alpha-nDCG@10", "nNRBP"])
    assert sorted(values) == ["q1", "q2", "q3"]  # q9 is not judged
    assert values["q1"]["alpha-nDCG@10"] == pytest.approx(1.0)
    assert values["q2"] == {"alpha-nDCG@10": 0.0, "nNRBP": 0.0}  # ndeval gives NaN for nNRBP here
    assert values["q3"] == {"alpha-nDCG@10": 0.0, "nNRBP": 0.0}
    assert diversity_per_query({}, {}, ["alpha-nDCG@10"]) == {}


def test_ties_follow_trec_order_not_pyndeval_doc_id_ascending():
    # Two subtopics; "a" covers s1, "b" and "c" both cover s2 only. "b" and "c" tie with "a" at 1.0.
    subtopics = {"q": {"s1": {"a": 1}, "s2": {"b": 1, "c": 1}}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}
    # trec order: c, b, a (doc id descending): alpha-nDCG@2 sees s2 twice, never s1.
    tied = alpha_ndcg_at_k(subtopics, run, 2)["q"]
    ideal = 1 + 1 / 1.5849625007211563  # s1 then s2, each new: gains 1 and 1 at ranks 1 and 2
    assert tied == pytest.approx((1 + 0.5 / 1.5849625007211563) / ideal)
    # 1 + 1e-9 ties 1.0 in float32 only: float64 puts "a" first.
    nudged = {"q": {"a": 1.0 + 1e-9, "b": 1.0, "c": 1.0}}
    assert alpha_ndcg_at_k(subtopics, nudged, 2)["q"] == pytest.approx(tied)
    assert alpha_ndcg_at_k(subtopics, nudged, 2, score_precision="float64")["q"] == pytest.approx(1.0)


def test_alpha_is_a_parameter():
    # "a" and "b" cover s1, "c" covers s2; the run ranks a, b, c, the greedy ideal a, c, b.
    subtopics = {"q": {"s1": {"a": 1, "b": 1}, "s2": {"c": 1}}}
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    d2, d3 = 1 / math.log2(3), 1 / math.log2(4)

    def expected(alpha):  # the repeated s1 gains (1 - alpha)
        return (1 + (1 - alpha) * d2 + d3) / (1 + d2 + (1 - alpha) * d3)

    for alpha in (0.0, 0.5, 1.0):
        value = alpha_ndcg_at_k(subtopics, run, 3, alpha=alpha)["q"]
        assert value == pytest.approx(expected(alpha)), alpha
    assert alpha_ndcg_at_k(subtopics, run, 3)["q"] == pytest.approx(expected(0.5))  # ndeval's default


def test_bad_requests_are_one_line_usage_errors():
    with pytest.raises(UsageError, match="ndeval evaluates at most 20 ranks"):
        M.get_measure("alpha_ndcg_at_21")
    with pytest.raises(UsageError, match="out of range"):
        alpha_ndcg_at_k({}, {}, 0)
    with pytest.raises(UsageError, match="needs subtopic qrels"):
        M.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["alpha_ndcg_at_10"])
    with pytest.raises(UsageError, match="unknown ndeval measure"):
        diversity_per_query({}, {}, ["alpha-nDCG"])

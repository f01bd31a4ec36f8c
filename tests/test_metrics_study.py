"""The study's own measures with values computed by hand: nugget coverage@k, p-MRR (against mteb's
published test case), per-variant means, and alpha-nDCG@10 through the study scorer against
pyndeval's published vector (../shared/data/ndeval)."""

from __future__ import annotations

import json
import math

import pytest

from conftest import shared_path
from evals_repro import metrics as M
from evals_repro.base.errors import UsageError
from evals_repro.metrics.published.coverage import nugget_coverage_at_k
from evals_repro.metrics.published.diversity import alpha_ndcg_at_k, read_subtopic_qrels
from evals_repro.metrics.published.p_mrr import p_mrr, pair_scores, rank_change
from evals_repro.study.candidates import Candidate
from evals_repro.study.scoring import parse_study_measure, score

LOG2 = math.log2


# -- p-MRR ------------------------------------------------------------------------------------------
def test_p_mrr_matches_mtebs_published_case():
    # mteb tests/test_evaluators/test_evaluation_metrics.py::test_p_mrr
    og = {"a-og": {"0": 1, "1": 2, "2": 3, "3": 4}}
    assert p_mrr({**og, "a-changed": {"0": 1, "1": 2, "2": 3, "3": 4}}, {"a": ["0"]}) == 0.0
    # doc 0: og rank 4 -> changed rank 1: 1/4 - 1
    assert p_mrr({**og, "a-changed": {"0": 4, "1": 1, "2": 2, "3": 3}}, {"a": ["0"]}) == -0.75
    # reversed: og rank 1 -> changed rank 4: 1 - 1/4
    assert p_mrr({"a-og": {"0": 4, "1": 1, "2": 2, "3": 3}, "a-changed": og["a-og"]}, {"a": ["0"]}) == 0.75


def test_p_mrr_missing_document_takes_depth_plus_one_and_pairs_weigh_equally():
    top100 = {f"d{i:03d}": float(100 - i) for i in range(100)}  # d000 rank 1 ... d099 rank 100
    moved = dict(top100)
    del moved["d049"]  # rank 50 in og, dropped from the changed top 100
    moved["x"] = -1.0
    run = {"p-og": top100, "p-changed": moved, "q-og": {"e": 2.0, "f": 1.0}, "q-changed": {"f": 2.0, "e": 1.0}}
    changed = {"p": ["d049", "absent"], "q": ["e"]}
    scores = pair_scores(run, changed, depth=100)
    # p: d049 50 -> 101: 1 - 50/101; "absent" 101 -> 101: 0. q: e 1 -> 2: 1 - 1/2
    assert scores["p"] == pytest.approx(((1 - 50 / 101) + 0.0) / 2)
    assert scores["q"] == pytest.approx(0.5)
    assert p_mrr(run, changed, depth=100) == pytest.approx((((1 - 50 / 101) + 0.0) / 2 + 0.5) / 2)
    # without a depth, a missing document takes the ranking's own length + 1 (mteb's rule)
    assert pair_scores(run, {"q": ["zzz"]})["q"] == 0.0
    assert rank_change(3, 3) == 0.0 and rank_change(2, 1) == -0.5 and rank_change(1, 3) == pytest.approx(2 / 3)


def test_p_mrr_ties_follow_trec_eval_order_not_insertion():
    tied = {"0": 0.5, "1": 0.5, "2": 0.5}
    reversed_order = dict(reversed(tied.items()))
    assert p_mrr({"a-og": tied, "a-changed": reversed_order}, {"a": ["0"]}) == 0.0


def test_p_mrr_as_a_measure_gives_both_rows_their_pair_score():
    qrels = {"a-og": {"0": 1}, "a-changed": {"1": 1}}
    run = {"a-og": {"0": 1, "1": 2, "2": 3, "3": 4}, "a-changed": {"0": 4, "1": 1, "2": 2, "3": 3}}
    rows = M.evaluate(qrels, run, ["p_mrr"], options={"changed_docs": {"a": ["0"]}})
    assert rows == {"a-changed": {"p_mrr": -0.75}, "a-og": {"p_mrr": -0.75}}
    with pytest.raises(UsageError, match="changed documents"):
        M.evaluate(qrels, run, ["p_mrr"])


# -- nugget coverage --------------------------------------------------------------------------------
NUGGETS = {
    "q1": {"n0": {"A": 1, "B": 1, "E": 0}, "n1": {"C": 1}, "n2": {"D": 1}, "n3": {"G": 1}},
    "q2": {"m0": {"E": 1, "F": 0}},
}


def test_coverage_by_hand():
    run = {"q1": {"E": 9.0, "A": 8.0, "C": 7.0, "B": 6.0, "D": 5.0}, "q2": {"F": 3.0}}
    assert nugget_coverage_at_k(NUGGETS, run, 1) == {"q1": 0.0, "q2": 0.0}  # E is judged 0 for n0; F is 0
    assert nugget_coverage_at_k(NUGGETS, run, 2) == {"q1": 0.25, "q2": 0.0}  # A covers n0
    assert nugget_coverage_at_k(NUGGETS, run, 20) == {"q1": 0.75, "q2": 0.0}  # G (n3) never retrieved
    assert nugget_coverage_at_k(NUGGETS, {}, 20) == {"q1": 0.0, "q2": 0.0}  # absent queries score 0
    flat = {"q1": {"A": 1}, "q2": {"E": 1}}
    rows = M.evaluate(flat, run, ["nugget_coverage_at_20"], subtopics=NUGGETS)
    assert M.mean(rows) == {"nugget_coverage_at_20": pytest.approx((0.75 + 0.0) / 2)}
    with pytest.raises(UsageError):
        nugget_coverage_at_k(NUGGETS, run, 0)


def test_coverage_ties_break_by_doc_id_descending():
    nuggets = {"q": {"n": {"A": 1}}}
    assert nugget_coverage_at_k(nuggets, {"q": {"A": 1.0, "B": 1.0}}, 1) == {"q": 0.0}  # B ranks first
    assert nugget_coverage_at_k(nuggets, {"q": {"A": 1.0, "0": 1.0}}, 1) == {"q": 1.0}


# -- alpha-nDCG@10 (the diversity module, fed FreshStack-shaped nuggets) -------------------------
def alpha_q1_by_hand() -> float:
    # ranking A, B, C, E, D, F; alpha = 0.5: A covers n0 (gain 1), B n0 again (0.5), C n1, E nothing
    # (judged 0), D n2, F unjudged. Ideal: four first-time nuggets, then n0's second document.
    dcg = 1 / LOG2(2) + 0.5 / LOG2(3) + 1 / LOG2(4) + 1 / LOG2(6)
    ideal = 1 / LOG2(2) + 1 / LOG2(3) + 1 / LOG2(4) + 1 / LOG2(5) + 0.5 / LOG2(6)
    return dcg / ideal


def test_alpha_ndcg_by_hand_on_nuggets():
    run = {"q1": {"A": 6.0, "B": 5.0, "C": 4.0, "E": 3.0, "D": 2.0, "F": 1.0}, "q2": {"E": 1.0}}
    values = alpha_ndcg_at_k(NUGGETS, run, 10)
    assert values["q1"] == pytest.approx(alpha_q1_by_hand(), abs=1e-4)  # ndeval prints 4 decimals' worth
    assert values["q2"] == pytest.approx(1.0)


# -- the study scorer -------------------------------------------------------------------------------
def candidate(qid: str, ids: list[str], qrels: dict, extra: dict) -> Candidate:
    return Candidate(
        "b", "s", qid, qid, ids, [float(len(ids) - i) for i in range(len(ids))], qrels, "r" + qid, "c", extra
    )


def test_study_scorer_reproduces_pyndevals_published_alpha_ndcg():
    folder = shared_path("data", "ndeval")
    expected = json.loads((folder / "pyndeval_readme.expected.json").read_text())["expected"]
    subtopics = read_subtopic_qrels(folder / "pyndeval_readme.qrels")["0"]
    run = M.read_trec_run(folder / "pyndeval_readme.run")["0"]
    qrels = {doc: 1 for docs in subtopics.values() for doc in docs}
    cands = [candidate("0", sorted(run, key=run.get, reverse=True), qrels, {"subtopics": subtopics})]
    got = score(cands, {"0": run}, ["alpha_ndcg_at_10", "alpha_ndcg_at_5"], depth=100)
    assert got["alpha_ndcg_at_10"] == pytest.approx(expected["alpha-nDCG@10"], abs=1e-4)
    assert got["alpha_ndcg_at_5"] == pytest.approx(expected["alpha-nDCG@5"], abs=1e-4)


def test_study_scorer_per_variant_and_p_mrr_by_hand():
    pair = {"pair": "a", "changed_docs": ["0"]}
    cands = [
        candidate("a-og", ["0", "1"], {"0": 1}, {**pair, "variant": "og"}),
        candidate("a-changed", ["0", "1"], {"1": 1}, {**pair, "variant": "changed"}),
    ]
    run = {"a-og": {"0": 2.0, "1": 1.0}, "a-changed": {"0": 2.0, "1": 1.0}}
    got = score(cands, run, ["ndcg_at_10[og]", "ndcg_at_10[changed]", "ndcg_at_10", "p_mrr"], depth=100)
    assert got["ndcg_at_10[og]"] == 1.0
    assert got["ndcg_at_10[changed]"] == pytest.approx(1 / LOG2(3))
    assert got["ndcg_at_10"] == pytest.approx((1 + 1 / LOG2(3)) / 2)
    assert got["p_mrr"] == 0.0  # the same ranking twice
    assert parse_study_measure("map[og]") == ("map", "og")
    with pytest.raises(UsageError):
        parse_study_measure("bogus_at_3")

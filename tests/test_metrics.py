"""Hand-computed cases: float32 ties, the `-c` rule, graded nDCG, cutoffs, parsing, pluggable families."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from evals_repro import metrics as M
from evals_repro.base.errors import DataError, UsageError
from evals_repro.metrics.protocol import FAMILIES, Family, Measure


def test_float32_equal_scores_tie_and_break_by_doc_id_descending():
    qrels = {"q": {"a": 1}}
    # 1 + 1e-9 and 1.0 differ as doubles but are the same float32: b (> a) ranks first.
    tied = M.evaluate(qrels, {"q": {"a": 1.0 + 1e-9, "b": 1.0}}, ["mrr_at_10", "p_at_1", "ndcg_at_1"])
    assert tied["q"] == {"mrr_at_10": 0.5, "p_at_1": 0.0, "ndcg_at_1": 0.0}
    # 1 + 1e-6 is a distinct float32: a ranks first.
    apart = M.evaluate(qrels, {"q": {"a": 1.0 + 1e-6, "b": 1.0}}, ["mrr_at_10", "p_at_1"])
    assert apart["q"] == {"mrr_at_10": 1.0, "p_at_1": 1.0}


def test_mrr_cut_follows_float32_order_at_the_boundary():
    # Ten non-relevant documents d0..d9 at 1.0 and the relevant `a` at 1.0 + 1e-9 (a float32 tie).
    # trec_eval order puts every d* (> "a") first, so `a` is at rank 11: RR@10 = 0, RR = 1/11.
    # Cutting by double order would keep `a` and drop d0.
    run = {"q": {f"d{i}": 1.0 for i in range(10)} | {"a": 1.0 + 1e-9}}
    scores = M.evaluate({"q": {"a": 1}}, run, ["mrr_at_10", "mrr", "recall_at_10"])
    assert scores["q"]["mrr_at_10"] == 0.0
    assert scores["q"]["mrr"] == pytest.approx(1 / 11)
    assert scores["q"]["recall_at_10"] == 0.0


def test_mrr_at_10_counts_rank_10_but_not_rank_11():
    def run_with_relevant_at(rank: int) -> dict:
        return {"q": {f"n{i:02d}": 100.0 - i for i in range(1, rank)} | {"rel": 100.0 - rank}}

    at_10 = M.evaluate({"q": {"rel": 1}}, run_with_relevant_at(10), ["mrr_at_10", "mrr"])
    at_11 = M.evaluate({"q": {"rel": 1}}, run_with_relevant_at(11), ["mrr_at_10", "mrr", "mrr_at_20"])
    assert at_10["q"] == {"mrr_at_10": pytest.approx(0.1), "mrr": pytest.approx(0.1)}
    assert at_11["q"]["mrr_at_10"] == 0.0
    assert at_11["q"]["mrr"] == pytest.approx(1 / 11)
    assert at_11["q"]["mrr_at_20"] == pytest.approx(1 / 11)


def test_query_with_qrels_but_no_results_scores_zero_and_counts_in_the_mean():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    run = {"q1": {"a": 2.0}, "q2": {}}  # q3 absent, q2 empty
    scores = M.evaluate(qrels, run, ["ndcg_at_10", "map", "recall_at_5", "p_at_1", "mrr_at_10"])
    assert sorted(scores) == ["q1", "q2", "q3"]
    for qid in ("q2", "q3"):
        assert set(scores[qid].values()) == {0.0}
    # trec_eval without -c would report 1.0 over one query; the harness rule (-c) gives 1/3.
    assert M.mean(scores) == {name: pytest.approx(1 / 3) for name in scores["q1"]}


def test_graded_ndcg_by_hand():
    qrels = {"q": {"d1": 2, "d2": 1, "d3": 0, "d4": 2}}  # d4 relevant but never retrieved
    run = {"q": {"d3": 3.0, "d1": 2.0, "d2": 1.0, "x": 0.5}}
    dcg3 = 0 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    idcg3 = 2 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    scores = M.evaluate(qrels, run, ["ndcg_at_1", "ndcg_at_3", "ndcg_at_10"])["q"]
    assert scores["ndcg_at_1"] == 0.0
    assert scores["ndcg_at_3"] == pytest.approx(dcg3 / idcg3, abs=1e-12)
    assert scores["ndcg_at_10"] == pytest.approx(dcg3 / idcg3, abs=1e-12)  # nothing relevant after rank 3


def test_map_precision_recall_by_hand():
    qrels = {"q": {"r1": 1, "r2": 1, "r3": 1, "n": 0}}
    run = {"q": {"r1": 0.9, "n": 0.8, "r2": 0.7}}  # relevant at ranks 1 and 3, r3 never retrieved
    scores = M.evaluate(qrels, run, ["map", "map_at_2", "p_at_1", "p_at_5", "recall_at_1", "recall_at_3"])["q"]
    assert scores["map"] == pytest.approx((1 / 1 + 2 / 3) / 3)
    assert scores["map_at_2"] == pytest.approx((1 / 1) / 3)
    assert scores["p_at_1"] == 1.0
    assert scores["p_at_5"] == pytest.approx(2 / 5)  # short rankings count missing ranks as misses
    assert scores["recall_at_1"] == pytest.approx(1 / 3)
    assert scores["recall_at_3"] == pytest.approx(2 / 3)


def test_every_judged_query_is_scored_even_without_a_relevant_document():
    # q2 is judged (grade 0 only): trec_eval scores it 0 and keeps it in num_q and every mean.
    qrels = {"q1": {"a": 1}, "q2": {"b": 0}, "q3": {}}
    run = {"q1": {"a": 1.0}, "q2": {"b": 1.0}, "q9": {"z": 1.0}}
    scores = M.evaluate(qrels, run, ["p_at_1", "ndcg_at_10", "map", "mrr_at_10", "recall_at_5"])
    assert list(scores) == ["q1", "q2"]  # q3 has no judgment, q9 no qrels
    assert set(scores["q2"].values()) == {0.0}
    assert M.mean(scores) == {name: 0.5 for name in scores["q1"]}
    with pytest.raises(DataError, match="no query has a judgment"):
        M.evaluate({"q3": {}}, run, ["p_at_1"])


def test_rows_keep_requested_measure_order_and_qids_sort_like_trec_eval():
    qrels = {"10": {"a": 1}, "9": {"a": 1}}
    scores = M.evaluate(qrels, {"9": {"a": 1.0}}, ["p_at_1", "ndcg_at_10", "map"])
    assert list(scores) == ["10", "9"]  # string order, as trec_eval sorts query ids
    assert list(scores["9"]) == ["p_at_1", "ndcg_at_10", "map"]


def test_nan_score_is_a_data_error():
    with pytest.raises(DataError, match="query q document a has a NaN score"):
        M.evaluate({"q": {"a": 1}}, {"q": {"a": float("nan")}}, ["p_at_1"])


def test_mean_over_selected_queries():
    per_query = {"a": {"m": 1.0}, "b": {"m": 0.0}, "c": {"m": 0.5}}
    assert M.mean(per_query) == {"m": pytest.approx(0.5)}
    assert M.mean(per_query, ["a", "c", "a", "unscored"]) == {"m": pytest.approx(0.75)}
    assert M.mean(per_query, ["unscored"]) == {}
    assert M.mean({}) == {}


@pytest.mark.parametrize(
    "given, canonical",
    [
        ("ndcg_at_10", "ndcg_at_10"),
        ("nDCG@10", "ndcg_at_10"),
        ("P@5", "p_at_5"),
        ("MRR@10", "mrr_at_10"),
        ("map", "map"),
        ("recall_at_1000", "recall_at_1000"),
        ("mrr", "mrr"),
        ("ndcg", "ndcg"),
    ],
)
def test_measure_names(given, canonical):
    assert M.get_measure(given).name == canonical


def test_trec_names():
    expected = {
        "ndcg_at_10": "ndcg_cut_10",
        "p_at_10": "P_10",
        "recall_at_100": "recall_100",
        "map_at_100": "map_cut_100",
        "map": "map",
        "mrr": "recip_rank",
        "mrr_at_10": "recip_rank_cut_10",
    }
    assert {name: M.get_measure(name).trec_name for name in expected} == expected


def test_parse_measures_splits_commas_and_drops_duplicates():
    assert M.parse_measures(["ndcg_at_10,map", "nDCG@10", "p_at_5"]) == ["ndcg_at_10", "map", "p_at_5"]
    assert all(M.get_measure(name).name == name for name in M.DEFAULT_MEASURES)


@pytest.mark.parametrize(
    "bad", ["ndcg_at_0", "ndcg_at_", "ndcg_at_x", "precision", "recal", "ndgc_at_10", "p_at_-1", "P.0", "map_cut.x"]
)
def test_unknown_measure_lists_the_valid_forms(bad):
    with pytest.raises(UsageError) as info:
        M.get_measure(bad)
    line = info.value.one_line()
    assert f"unknown measure '{bad}'" in line
    for form in ("ndcg_at_{k}", "map_at_{k}", "recall_at_{k}", "p_at_{k}", "mrr_at_{k}"):
        assert form in line
    assert "\n" not in line


def test_a_registered_family_is_computed_beside_trec_measures():
    """The float-gain nDCG plugs in this way: a family whose compute reads `data.gains`."""

    def compute(measures: list[Measure], data: M.EvalData) -> M.PerQuery:
        return {
            qid: {m.name: sum(data.gains.get(qid, {}).get(d, 0.0) for d in data.run[qid]) for m in measures}
            for qid in data.qids
        }

    def parse(text: str) -> Measure | None:
        return Measure("gain_sum", "gain_sum", compute) if text == "gain_sum" else None

    family = M.register(Family("gain_sum", ("gain_sum",), parse))
    try:
        scores = M.evaluate(
            {"q": {"a": 1}}, {"q": {"a": 1.0, "b": 0.5}}, ["gain_sum", "p_at_1"], gains={"q": {"a": 0.25, "b": 0.5}}
        )
        assert scores == {"q": {"gain_sum": 0.75, "p_at_1": 1.0}}
        assert "gain_sum" in M.measure_forms()
        with pytest.raises(ValueError):
            M.register(Family("gain_sum", (), parse))
    finally:
        FAMILIES.remove(family)


def test_import_is_light():
    """pytrec_eval pulls in NumPy; the CLI imports metrics at start-up, so it must load lazily."""
    code = "import sys, evals_repro.metrics; print('pytrec_eval' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_measure_families_load_on_the_first_lookup_in_their_order():
    """Importing the package (or `protocol`, as a refusal's modules do) compiles no family module; the first
    lookup registers them all, trec_eval's own spellings last (the order error messages list forms in)."""
    code = (
        "import json, sys, evals_repro.metrics as M\n"
        "before = sorted(m for m in sys.modules if m.startswith('evals_repro.metrics.') and m.count('.') == 3)\n"
        "M.get_measure('nDCG@10')\n"
        "from evals_repro.metrics.protocol import FAMILIES\n"
        "print(json.dumps([before, [f.name for f in FAMILIES]]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, names = json.loads(done.stdout)
    assert before == ["evals_repro.metrics.trec.complete", "evals_repro.metrics.trec_io.write"]
    assert names[:7] == ["judged", "ndcg", "map", "recall", "precision", "rr", "success"]
    assert names[7:] == ["ndcg_float", "diversity", "nugget_coverage", "p_mrr", "passage_in_context", "trec_eval"]


def test_the_first_lookups_of_several_threads_all_see_every_family():
    """Threads that name measures at once (a run's workers) wait for the families a first lookup is loading."""
    code = (
        "import threading, evals_repro.metrics as M\n"
        "names = ['alpha_ndcg_at_10', 'P.5,10', 'ndcg_float_at_10', 'judged_at_10', 'gm_map', 'p_mrr'] * 3\n"
        "barrier, found, failed = threading.Barrier(len(names)), [], []\n"
        "def look(name):\n"
        "    barrier.wait()\n"
        "    try:\n        found.append(M.expand_measure(name))\n"
        "    except Exception as exc:\n        failed.append(f'{name}: {exc}')\n"
        "threads = [threading.Thread(target=look, args=(n,)) for n in names]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print(len(found), failed)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[0] == "18 []"


def test_trec_ranked_orders_like_trec_eval():
    scores = {"a": 1.0 + 1e-9, "b": 1.0, "c": 2.0, "d": 1.0 - 1e-6}
    # a and b are one float32 value: b (> a) first; the original scores are returned unchanged.
    assert M.trec_ranked(scores) == [("c", 2.0), ("b", 1.0), ("a", 1.0 + 1e-9), ("d", 1.0 - 1e-6)]
    assert M.trec_ranked(scores, top_k=2) == [("c", 2.0), ("b", 1.0)]


def test_mappings_and_integral_float_grades_are_accepted_fractional_grades_refused():
    from types import MappingProxyType

    scores = M.evaluate({"q": MappingProxyType({"a": 1.0})}, {"q": MappingProxyType({"a": 1, "b": 2})}, ["mrr"])
    assert scores == {"q": {"mrr": 0.5}}
    with pytest.raises(DataError, match="query q document a has grade 0.5; grades are integers"):
        M.evaluate({"q": {"a": 0.5}}, {"q": {"a": 1.0}}, ["mrr"])

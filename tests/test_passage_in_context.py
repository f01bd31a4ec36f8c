"""Legal RAG Bench's own measure, `relevant_passage_in_context_at_5` (issue 23.5): a hit when a gold passage
id is contained in a retrieved id among the top 5, as isaacus-dev/legal-rag-bench eval.py computes it
(`any(rel_id in d.metadata["id"] for d in docs)`, k = 5), scored beside nDCG@10 on exact ids.

Hand values: q1's gold p-0001 is not retrieved, but p-00017 (rank 1) contains its id: hit (nDCG@10 on
exact ids: 0). q2's gold is at rank 6: no hit at 5, a hit at 6. q3 has no results: 0. Mean at 5: 1/3.
"""

from __future__ import annotations

import json

import pytest

import study_fixtures as sfx
from evals_repro import metrics as M
from evals_repro.benchmarks import get_benchmark
from evals_repro.cli import main

QRELS = {"q1": {"p-0001": 1}, "q2": {"p-0002": 1, "p-0009": 0}, "q3": {"p-0003": 1}}
RUN = {
    "q1": {"p-00017": 0.9, "p-0005": 0.5},
    "q2": {"a": 6.0, "b": 5.0, "c": 4.0, "d": 3.0, "p-0009": 2.0, "p-0002": 1.0},
    "q3": {},
}


def test_hand_values():
    rows = M.evaluate(
        QRELS, RUN, ["relevant_passage_in_context_at_5", "relevant_passage_in_context_at_6", "ndcg_at_10"]
    )
    assert [rows[q]["relevant_passage_in_context_at_5"] for q in ("q1", "q2", "q3")] == [1.0, 0.0, 0.0]
    assert rows["q2"]["relevant_passage_in_context_at_6"] == 1.0
    assert rows["q1"]["ndcg_at_10"] == 0.0  # exact ids: p-00017 is not p-0001
    assert M.mean(rows)["relevant_passage_in_context_at_5"] == pytest.approx(1 / 3)
    assert M.get_measure("relevant_passage_in_context_at_5").trec_name == "relevant_passage_in_context_5"


def test_declared_as_the_benchmark_own_measure():
    decl = get_benchmark("legalragbench")
    assert decl.subset_source("legalragbench")["own_measures"] == ["relevant_passage_in_context_at_5"]
    assert "relevant_passage_in_context_at_5" in decl.study_settings.measures
    assert decl.study_settings.measure == "ndcg_at_10"


@pytest.fixture(scope="module")
def hub(fake_hub):
    return sfx.install(fake_hub)


def test_every_run_scores_it_beside_ndcg(hub, tmp_path, capsys):
    # BM25 on the fixture's 5 passages puts each question's gold passage in its top 5 (each shares a term).
    results = tmp_path / "results"
    args = ["--results-dir", str(results), "--cache-dir", str(tmp_path / "cache")]
    assert main(["run", "bm25", "--benchmark", "legalragbench", *args]) == 0
    result = json.loads((results / "legalragbench" / "bm25" / "legalragbench.json").read_text())
    assert "relevant_passage_in_context_at_5" in result["protocol"]["measures"]
    assert result["metrics"]["relevant_passage_in_context_at_5"] == 1.0
    assert {q: e["metrics"]["relevant_passage_in_context_at_5"] for q, e in result["per_query"].items()} == {
        "q1": 1.0,
        "q2": 1.0,
        "q3": 1.0,
    }
    capsys.readouterr()

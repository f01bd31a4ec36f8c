"""mteb's `ignore_identical_ids` (issue 24.1): BEIR's evaluator drops a retrieved document whose id equals the
query id before scoring, for the tasks that set the flag (mteb a905523d0: FiQA2018 does; TRECCOVID, HotpotQA,
NQ and SciFact do not: mteb/tasks/retrieval/eng/*.py).

Hand computation: query "7" judges only "a"; the run ranks "7" first, "a" second. Kept, "a" is at rank 2:
nDCG@10 = 1/log2(3) = 0.630930; dropped (mteb), "a" is first: 1.0. Query "9" ranks its relevant "b" first
(1.0 either way). Means 0.815465 and 1.0.
"""

from __future__ import annotations

import math

import pytest

from evals_repro import metrics as M
from evals_repro.base.errors import UsageError
from evals_repro.benchmarks import get_benchmark
from evals_repro.cli import main
from evals_repro.metrics.protocol import ScoringProtocol

QRELS = {"7": {"a": 1}, "9": {"b": 1}}
RUN = {"7": {"7": 0.9, "a": 0.8, "c": 0.1}, "9": {"b": 0.9, "7": 0.5}}
KEPT = 1 / math.log2(3)


def test_the_query_own_id_is_dropped_only_under_the_rule():
    plain = M.evaluate(QRELS, RUN, ScoringProtocol(measures=("ndcg_at_10",)))
    mteb = M.evaluate(QRELS, RUN, ScoringProtocol(measures=("ndcg_at_10",), ignore_identical_ids=True))
    assert plain["7"]["ndcg_at_10"] == pytest.approx(KEPT, abs=1e-12)
    assert mteb["7"]["ndcg_at_10"] == 1.0
    assert M.mean(plain)["ndcg_at_10"] == pytest.approx((KEPT + 1) / 2, abs=1e-12)
    assert M.mean(mteb)["ndcg_at_10"] == 1.0
    # Only the query's own id goes: "7" retrieved for query "9" stays (it is another query's id).
    counts = M.evaluate(QRELS, RUN, ScoringProtocol(measures=("num_ret",), ignore_identical_ids=True))
    assert counts["7"]["num_ret"] == 2 and counts["9"]["num_ret"] == 2


def test_the_rule_is_part_of_the_recorded_protocol():
    protocol = ScoringProtocol(ignore_identical_ids=True)
    assert protocol.as_dict()["ignore_identical_ids"] is True and "ignore_identical_ids" in protocol.rules()
    assert ScoringProtocol.from_dict(protocol.as_dict()) == protocol
    older = {k: v for k, v in protocol.as_dict().items() if k != "ignore_identical_ids"}
    assert ScoringProtocol.from_dict(older).ignore_identical_ids is False  # files written before the field
    with pytest.raises(UsageError, match="ignore_identical_ids"):
        ScoringProtocol(ignore_identical_ids="yes")  # type: ignore[arg-type]


def test_text_declaration_follows_each_mteb_task():
    decl = get_benchmark("text")
    flags = {name: bool(decl.subset_source(name).get("ignore_identical_ids")) for name in decl.subset_names}
    assert flags == {
        "fiqa": True,  # FiQA2018: ignore_identical_ids = True
        "trec-covid": False,
        "hotpotqa": False,
        "nq": False,
        "scifact": False,
        "dl19": False,  # scored as TREC / pyserini (ir_datasets copies), not as mteb's TRECDL tasks
        "dl20": False,
    }


def test_evaluate_command_option(tmp_path, capsys):
    (tmp_path / "qrels").write_text("7 0 a 1\n9 0 b 1\n")
    (tmp_path / "run").write_text("7 Q0 7 1 0.9 r\n7 Q0 a 2 0.8 r\n9 Q0 b 1 0.9 r\n")
    args = ["evaluate", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "-m", "ndcg_cut.10"]
    assert main(args) == 0
    assert capsys.readouterr().out.split() == ["ndcg_cut_10", "all", "0.8155"]
    assert main([*args, "--ignore-identical-ids"]) == 0
    assert capsys.readouterr().out.split() == ["ndcg_cut_10", "all", "1.0000"]


def test_the_study_scores_with_the_rule():
    from evals_repro.study.candidates import Candidate
    from evals_repro.study.scoring import score

    candidates = [
        Candidate("text", "fiqa", qid, "q", list(RUN[qid]), list(RUN[qid].values()), QRELS[qid], "r", "c")
        for qid in ("7", "9")
    ]
    assert score(candidates, RUN, ["ndcg_at_10"], 100)["ndcg_at_10"] == pytest.approx((KEPT + 1) / 2, abs=1e-12)
    assert score(candidates, RUN, ["ndcg_at_10"], 100, ignore_identical_ids=True)["ndcg_at_10"] == 1.0


def test_evaluate_cli_equals_beir_logic_run_through_pytrec_eval(tmp_path, capsys):
    """BEIR/mteb's rule, computed independently: drop `results[qid][qid]`, then pytrec_eval's ndcg_cut.10 and
    the mean over queries. Query "1" has its own id at rank 1 (and judged relevant), query "2" its own
    relevant id at rank 1, query "3" a non-relevant document at rank 1 and its own id at rank 2."""
    import pytrec_eval

    qrels = {"1": {"7": 1, "9": 2, "1": 1}, "2": {"5": 1, "2": 1}, "3": {"3": 1, "8": 1}}
    run = {
        "1": {"1": 0.9, "4": 0.8, "7": 0.7, "9": 0.6},
        "2": {"2": 0.9, "6": 0.8, "5": 0.7},
        "3": {"4": 0.9, "3": 0.8, "3x": 0.75, "8": 0.7},
    }
    expected = {}
    for drop in (False, True):
        kept = {q: {d: s for d, s in docs.items() if not (drop and d == q)} for q, docs in run.items()}
        found = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(kept)
        expected[drop] = sum(found[q]["ndcg_cut_10"] for q in sorted(found)) / 3
    assert f"{expected[True]:.4f}" == "0.4048" and f"{expected[False]:.4f}" == "0.7749"
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    (tmp_path / "run").write_text(
        "".join(f"{q} Q0 {d} {i} {s} r\n" for q, docs in run.items() for i, (d, s) in enumerate(docs.items(), 1))
    )
    for flag, drop in (([], False), (["--ignore-identical-ids"], True)):
        code = main(
            ["evaluate", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "-m", "ndcg_cut.10", *flag]
        )
        out = capsys.readouterr().out.split()
        assert code == 0 and out == ["ndcg_cut_10", "all", f"{expected[drop]:.4f}"]
    per_query = M.evaluate(qrels, run, ScoringProtocol(measures=("ndcg_at_10",), ignore_identical_ids=True))
    kept = {q: {d: s for d, s in docs.items() if d != q} for q, docs in run.items()}
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(kept)
    assert {q: row["ndcg_at_10"] for q, row in per_query.items()} == pytest.approx(
        {q: row["ndcg_cut_10"] for q, row in reference.items()}, abs=1e-12
    )

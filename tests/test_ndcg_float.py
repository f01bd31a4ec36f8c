"""ndcg_float_at_k: the issue's worked examples, hand-computed ties and pytrec_eval on integer gains."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from evals_repro.base.errors import DataError, UsageError
from evals_repro.metrics.published.ndcg_float import mean_ndcg_float, ndcg_float_at_k, ndcg_float_per_query

L2 = math.log2


def test_worked_example_untied():
    gains = {"d1": 1.0, "d2": 0.5, "d3": 0.0}
    scores = {"d2": 0.9, "d1": 0.7, "d3": 0.1}
    expected = (0.5 + 1 / L2(3)) / (1 + 0.5 / L2(3))
    for rule in ("group-mean", "doc-id"):
        assert ndcg_float_at_k(scores, gains, k=2, tie_rule=rule) == pytest.approx(expected, abs=1e-12)


def test_worked_example_all_tied():
    gains = {"d1": 1.0, "d2": 0.0, "d3": 0.0}
    scores = {"d1": 0.5, "d2": 0.5, "d3": 0.5}
    expected = (1 / 3) * (1 + 1 / L2(3) + 1 / L2(4))
    assert ndcg_float_at_k(scores, gains, k=10) == pytest.approx(expected, abs=1e-12)
    # doc-id: d3, d2, d1 -> the relevant page lands third.
    assert ndcg_float_at_k(scores, gains, k=10, tie_rule="doc-id") == pytest.approx(1 / L2(4), abs=1e-12)


def test_worked_example_tie_straddles_cutoff():
    gains = {"d1": 0.0, "d2": 1.0, "d3": 0.0}
    scores = {"d1": 1.0, "d2": 0.5, "d3": 0.5}
    assert ndcg_float_at_k(scores, gains, k=2) == pytest.approx(0.5 / L2(3), abs=1e-12)
    # doc-id: d3 before d2, so the relevant page falls outside the top 2.
    assert ndcg_float_at_k(scores, gains, k=2, tie_rule="doc-id") == 0.0


def test_all_zero_gains_score_zero():
    assert ndcg_float_at_k({"a": 1.0, "b": 0.5}, {"a": 0.0, "b": 0.0}) == 0.0
    assert ndcg_float_at_k({"a": 1.0}, {}) == 0.0


def test_tie_group_at_the_top10_boundary():
    # Eight untied zero-gain pages fill ranks 1-8; a group of four ties occupies ranks 9-12.
    scores = {f"d{i}": 10.0 - i for i in range(8)}
    scores.update({"t1": 1.0, "t2": 1.0, "t3": 1.0, "t4": 1.0})
    gains = {"t1": 1.0, "t3": 1.0, "t2": 0.0, "t4": 0.0}
    ideal = 1 + 1 / L2(3)
    group_mean = 0.5 * (1 / L2(10) + 1 / L2(11)) / ideal
    assert ndcg_float_at_k(scores, gains, k=10) == pytest.approx(group_mean, abs=1e-12)
    # doc-id: t4 (rank 9, gain 0), t3 (rank 10, gain 1), t2 and t1 fall past the cutoff.
    assert ndcg_float_at_k(scores, gains, k=10, tie_rule="doc-id") == pytest.approx(1 / L2(11) / ideal, abs=1e-12)


def test_group_mean_is_the_expectation_over_orderings():
    scores = {"a": 3.0, "b": 2.0, "c": 2.0, "d": 2.0, "e": 1.0}
    gains = {"a": 0.2, "b": 0.9, "c": 0.0, "d": 0.4, "e": 0.7, "z": 0.6}  # z is never retrieved
    k = 3
    ideal = sum(g / L2(i + 2) for i, g in enumerate(sorted(gains.values(), reverse=True)[:k]))
    values = []
    for perm in itertools.permutations(["b", "c", "d"]):
        order = ["a", *perm, "e"][:k]
        values.append(sum(gains[d] / L2(i + 2) for i, d in enumerate(order)) / ideal)
    assert ndcg_float_at_k(scores, gains, k=k) == pytest.approx(sum(values) / len(values), abs=1e-12)


def test_unjudged_pages_count_zero_and_ideal_uses_all_gains():
    # "x" has no gain; "z" is judged but not retrieved, so it enters the ideal ranking only.
    scores = {"x": 0.9, "a": 0.8}
    gains = {"a": 0.5, "z": 1.0}
    expected = (0.5 / L2(3)) / (1.0 + 0.5 / L2(3))
    assert ndcg_float_at_k(scores, gains, k=10) == pytest.approx(expected, abs=1e-12)


def test_query_absent_from_gains_is_not_scored():
    run = {"q1": {"a": 1.0}, "q2": {"a": 1.0}}
    gains = {"q1": {"a": 0.25}}
    assert ndcg_float_per_query(run, gains) == {"q1": 1.0}
    assert mean_ndcg_float(run, gains) == 1.0
    # Asked for explicitly (the positive-qrel queries), it scores 0: its ideal DCG is 0.
    assert ndcg_float_per_query(run, gains, qids=["q1", "q2"]) == {"q1": 1.0, "q2": 0.0}
    # A judged query missing from the run scores 0 (trec_eval -c).
    assert ndcg_float_per_query({}, gains) == {"q1": 0.0}
    # A query with gains but all zero is scored, as 0.
    assert mean_ndcg_float(run, {"q1": {"a": 0.25}, "q2": {"a": 0.0}}) == 0.5


def test_float_gain_rules_compare_scores_as_given():
    # 0.3 and 0.30000001 are one float32 value but two doubles: every rule ranks "a" first, as rcp-ndcg does.
    scores = {"a": 0.30000001, "b": 0.3}
    gains = {"a": 1.0}
    for rule in ("doc-id", "group-mean", "input-order"):
        assert ndcg_float_at_k(scores, gains, k=1, tie_rule=rule) == 1.0, rule


def test_three_tie_rules_on_an_exact_tie():
    # "a" (gain 1) and "b" (gain 0) tie exactly; the run lists "a" first.
    scores = {"a": 0.5, "b": 0.5}
    gains = {"a": 1.0}
    assert ndcg_float_at_k(scores, gains, k=1, tie_rule="doc-id") == 0.0  # "b" > "a"
    assert ndcg_float_at_k(scores, gains, k=1, tie_rule="input-order") == 1.0  # run order
    assert ndcg_float_at_k({"b": 0.5, "a": 0.5}, gains, k=1, tie_rule="input-order") == 0.0
    assert ndcg_float_at_k(scores, gains, k=1, tie_rule="group-mean") == 0.5  # mean gain of the tie
    # rcp-ndcg's spellings are accepted too.
    assert ndcg_float_at_k(scores, gains, k=1, tie_rule="input_order") == 1.0
    assert ndcg_float_at_k(scores, gains, k=1, tie_rule="doc_id_desc") == 0.0


@pytest.mark.parametrize("bad", [-0.1, float("inf"), float("nan")])
def test_bad_gains_are_errors(bad):
    with pytest.raises(DataError, match="gain"):
        ndcg_float_at_k({"a": 1.0}, {"a": bad})


def test_nan_score_and_bad_options_are_errors():
    with pytest.raises(DataError, match="NaN"):
        ndcg_float_at_k({"a": float("nan")}, {"a": 1.0})
    with pytest.raises(UsageError, match="tie rule"):
        ndcg_float_at_k({"a": 1.0}, {"a": 1.0}, tie_rule="random")
    with pytest.raises(UsageError, match="cutoff"):
        ndcg_float_at_k({"a": 1.0}, {"a": 1.0}, k=0)


def test_doc_id_rule_matches_pytrec_eval_on_integer_gains():
    import pytrec_eval

    rng = random.Random(7)
    qrels, run = {}, {}
    for q in range(40):
        qid = f"q{q}"
        docs = [f"d{rng.randrange(60)}" for _ in range(25)]
        qrels[qid] = {d: rng.choice([0, 0, 1, 2]) for d in docs[:15]}
        if not any(qrels[qid].values()):
            qrels[qid][docs[0]] = 1
        # coarse scores make many exact ties (exact in float32 and float64 alike)
        run[qid] = {d: rng.randrange(5) / 4 for d in docs}
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    gains = {q: {d: float(g) for d, g in docs.items()} for q, docs in qrels.items()}
    ours = ndcg_float_per_query(run, gains, k=10, tie_rule="doc-id")
    assert set(ours) == set(expected)
    for qid, value in ours.items():
        assert value == pytest.approx(expected[qid]["ndcg_cut_10"], abs=1e-6), qid


def test_evaluate_command_with_gains(tmp_path, capsys):
    from evals_repro.cli import main

    (tmp_path / "qrels").write_text("q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 1\n")
    (tmp_path / "gains").write_text("q1 0 d1 1.0\nq1 0 d2 0.5\nq1 0 d9 0\nq2 0 d3 0.25\n")
    (tmp_path / "run").write_text(
        "q1 Q0 d2 1 0.9 t\nq1 Q0 d1 2 0.7 t\nq1 Q0 d9 3 0.1 t\nq2 Q0 d3 1 0.5 t\nq2 Q0 d4 2 0.5 t\n"
    )
    args = [
        "evaluate",
        "--qrels",
        str(tmp_path / "qrels"),
        "--run",
        str(tmp_path / "run"),
        "--gains",
        str(tmp_path / "gains"),
        "-m",
        "ndcg_at_10",
        "-q",
    ]
    assert main(args) == 0
    lines = {tuple(line.split()[:2]): float(line.split()[2]) for line in capsys.readouterr().out.splitlines()}
    q1 = (0.5 + 1 / L2(3)) / (1 + 0.5 / L2(3))
    q2_group_mean = 0.125 * (1 + 1 / L2(3)) / 0.25  # d3 (0.25) ties d4 (unjudged) at ranks 1-2
    assert lines[("ndcg_float_at_10", "q1")] == pytest.approx(q1, abs=1e-4)
    assert lines[("ndcg_float_at_10", "q2")] == pytest.approx(q2_group_mean, abs=1e-4)
    assert lines[("ndcg_float_at_10", "all")] == pytest.approx((q1 + q2_group_mean) / 2, abs=1e-4)
    assert main(args[:-1] + ["--tie-rule", "doc-id"]) == 0
    lines = {tuple(line.split()[:2]): float(line.split()[2]) for line in capsys.readouterr().out.splitlines()}
    assert lines[("ndcg_float_at_10", "all")] == pytest.approx((q1 + 1 / L2(3)) / 2, abs=1e-4)  # d4 before d3

    (tmp_path / "bad").write_text("q1 0 d1 -0.5\n")
    assert main(args[:-1] + ["--gains", str(tmp_path / "bad")]) == 2
    assert "bad:1: gain -0.5 is not a finite number >= 0" in capsys.readouterr().err
    assert main(args[:5] + ["-m", "ndcg_float_at_10"]) == 2
    assert "needs float gains" in capsys.readouterr().err

"""Every reported measure against trec_eval's published output on its own test files.

`out.test.aq` is `trec_eval -m all_trec -q qrels.test results.test` (trec_eval v10.0). Values are
compared at the printed precision. Measures trec_eval does not print (ndcg_at_1/3, recall_at_1/50,
p_at_1, mrr_at_10) are checked against values derived from printed ones, or against an independent
reference implementation that first has to reproduce the printed cutoffs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import shared_path
from evals_repro import metrics as M
from evals_repro.cli import main

QIDS = ("301", "302", "303")
CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


def published() -> dict[tuple[str, str], str]:
    """(trec_eval measure, qid or 'all') -> printed value, parsed from out.test.aq."""
    expected = {}
    for line in shared_path("data", "trec_eval", "out.test.aq").read_text().splitlines():
        name, qid, value = line.split("\t")
        expected[name.strip(), qid] = value
    return expected


def inputs():
    folder = shared_path("data", "trec_eval")
    return folder / "qrels.test", folder / "results.test"


# Our name -> trec_eval's name, for every measure out.test.aq prints.
DIRECT = {"map": "map", "ndcg": "ndcg", "mrr": "recip_rank"}
for _k in CUTOFFS:
    DIRECT[f"ndcg_at_{_k}"] = f"ndcg_cut_{_k}"
    DIRECT[f"map_at_{_k}"] = f"map_cut_{_k}"
    DIRECT[f"recall_at_{_k}"] = f"recall_{_k}"
    DIRECT[f"p_at_{_k}"] = f"P_{_k}"


def derived(expected) -> dict[str, dict[str, float]]:
    """Measures trec_eval does not print, derived from ones it does (binary qrels here):
    RR@10 = RR when the first relevant is within rank 10 (RR >= 0.1), else 0; P@1 = 1 iff RR = 1;
    nDCG@1 = P@1 (the ideal first document is relevant); R@1 = P@1 / num_rel."""
    values: dict[str, dict[str, float]] = {}
    for qid in QIDS:
        rr = float(expected["recip_rank", qid])
        p1 = 1.0 if rr == 1.0 else 0.0
        values[qid] = {
            "mrr_at_10": rr if rr >= 0.1 else 0.0,
            "p_at_1": p1,
            "ndcg_at_1": p1,
            "recall_at_1": p1 / int(expected["num_rel", qid]),
        }
    return values


def reference_ranking(scores: dict[str, float]) -> list[str]:
    return [doc for doc, _ in sorted(scores.items(), key=lambda kv: (np.float32(kv[1]), kv[0]), reverse=True)]


def reference_ndcg(judged: dict[str, int], ranking: list[str], k: int) -> float:
    dcg = sum(max(judged.get(doc, 0), 0) / math.log2(i + 2) for i, doc in enumerate(ranking[:k]))
    ideal = sorted((r for r in judged.values() if r > 0), reverse=True)[:k]
    return dcg / sum(r / math.log2(i + 2) for i, r in enumerate(ideal))


def reference_recall(judged: dict[str, int], ranking: list[str], k: int) -> float:
    return sum(judged.get(doc, 0) > 0 for doc in ranking[:k]) / sum(r > 0 for r in judged.values())


REFERENCE = {"ndcg_at": reference_ndcg, "recall_at": reference_recall}
REFERENCE_ANCHORS = {"ndcg_at": (5, 10, 15, 20, 30, 100), "recall_at": (5, 10, 15, 20, 30, 100)}
REFERENCE_ONLY = ("ndcg_at_3", "recall_at_50")


@pytest.fixture(scope="module")
def library_scores():
    qrels_path, run_path = inputs()
    qrels, run = M.read_trec_qrels(qrels_path), M.read_trec_run(run_path)
    names = list(DIRECT) + list(M.DEFAULT_MEASURES)
    return qrels, run, M.evaluate(qrels, run, names)


def test_library_matches_published_per_query_and_all(library_scores):
    expected = published()
    _, _, scores = library_scores
    assert sorted(scores) == list(QIDS)
    means = M.mean(scores)
    for ours, theirs in DIRECT.items():
        for qid in QIDS:
            assert f"{scores[qid][ours]:.4f}" == expected[theirs, qid], (ours, qid)
        assert f"{means[ours]:.4f}" == expected[theirs, "all"], ours


def test_library_matches_values_derived_from_published(library_scores):
    expected = published()
    _, _, scores = library_scores
    values = derived(expected)
    for name in values["301"]:
        for qid in QIDS:
            assert f"{scores[qid][name]:.4f}" == f"{values[qid][name]:.4f}", (name, qid)
    # The cut matters on this data: query 303's first relevant document is at rank 19.
    assert expected["recip_rank", "303"] == "0.0526" and scores["303"]["mrr_at_10"] == 0.0


def test_reference_reproduces_published_then_checks_unprinted_cutoffs(library_scores):
    expected = published()
    qrels, run, _ = library_scores
    rankings = {qid: reference_ranking(run[qid]) for qid in QIDS}
    for family, ks in REFERENCE_ANCHORS.items():
        for k in ks:
            for qid in QIDS:
                value = REFERENCE[family](qrels[qid], rankings[qid], k)
                assert f"{value:.4f}" == expected[DIRECT[f"{family}_{k}"], qid], (family, k, qid)
    scores = M.evaluate(qrels, run, REFERENCE_ONLY)
    for name in REFERENCE_ONLY:
        family, k = name.rsplit("_", 1)
        for qid in QIDS:
            assert scores[qid][name] == pytest.approx(REFERENCE[family](qrels[qid], rankings[qid], int(k)), abs=1e-12)


def test_every_default_measure_is_checked():
    checked = set(DIRECT) | set(derived_names()) | set(REFERENCE_ONLY)
    assert set(M.DEFAULT_MEASURES) <= checked, set(M.DEFAULT_MEASURES) - checked


def derived_names():
    return ("mrr_at_10", "p_at_1", "ndcg_at_1", "recall_at_1")


def run_cli(capsys, *args: str) -> tuple[int, list[str], str]:
    code = main(["evaluate", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


def test_evaluate_command_prints_trec_eval_lines(capsys):
    qrels_path, run_path = inputs()
    expected_lines = set(shared_path("data", "trec_eval", "out.test.aq").read_text().splitlines())
    code, lines, _ = run_cli(
        capsys, "--qrels", str(qrels_path), "--run", str(run_path), "-q", "--trec-names", "--measure", ",".join(DIRECT)
    )
    assert code == 0
    assert len(lines) == len(DIRECT) * (len(QIDS) + 1) + 1
    for line in lines:  # byte-identical to trec_eval's own lines, padding included
        assert line in expected_lines, line


def test_evaluate_command_our_names(capsys):
    qrels_path, run_path = inputs()
    expected = published()
    values = derived(expected)
    names = list(DIRECT) + list(derived_names())
    code, lines, _ = run_cli(
        capsys,
        "--qrels",
        str(qrels_path),
        "--run",
        str(run_path),
        "-q",
        *[arg for name in names for arg in ("-m", name)],
    )
    assert code == 0
    printed = {(name.strip(), qid): value for name, qid, value in (line.split("\t") for line in lines)}
    assert printed["num_q", "all"] == "3"
    for ours, theirs in DIRECT.items():
        for qid in (*QIDS, "all"):
            assert printed[ours, qid] == expected[theirs, qid], (ours, qid)
    for name in derived_names():
        for qid in QIDS:
            assert printed[name, qid] == f"{values[qid][name]:.4f}"
        mean = sum(values[qid][name] for qid in QIDS) / len(QIDS)
        assert printed[name, "all"] == f"{mean:.4f}"


def test_evaluate_command_means_only_by_default(capsys):
    qrels_path, run_path = inputs()
    expected = published()
    code, lines, _ = run_cli(capsys, "--qrels", str(qrels_path), "--run", str(run_path))
    assert code == 0
    assert all(line.split("\t")[1] == "all" for line in lines)
    assert len(lines) == len(M.DEFAULT_MEASURES) + 1
    printed = {line.split("\t")[0].strip(): line.split("\t")[2] for line in lines}
    assert printed["ndcg_at_10"] == expected["ndcg_cut_10", "all"]
    assert printed["map"] == expected["map", "all"]

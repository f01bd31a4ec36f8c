"""`evaluate` against every published output in ../shared/data/trec_eval (trec_eval v10.0's `test/`).

Under `--score-precision float64` (trec_eval 10.x) the output must equal trec_eval's, line for
line. Under the default (float32: trec_eval 9.x / pytrec_eval) the same lines must come out,
except iprec_at_recall / 11pt_avg, where trec_eval 10 rounds recall points differently: those
must equal pytrec_eval's (trec_eval 9.0.x) values instead.
"""

from __future__ import annotations

import math

import pytest

from conftest import shared_path
from evals_repro.cli import main

# (published output, qrels, run, options): how SOURCE.md says trec_eval produced each file.
MEAS_PARAMS = [
    "-m", "iprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000",
    "-m", "Rprec_mult.5.0,0.2,0.35", "-m", "utility.2,-1,0,0", "-m", "11pt_avg..25,.5,.75",
    "-m", "ndcg.1=3,2=9,4=4.5", "-m", "ndcg_cut.10,20,23.4", "-m", "success.2,5,20", "-q",
]  # fmt: skip
CASES = {
    "out.test": ("qrels.test", "results.test", ["-m", "official"]),
    "out.test.with-comments": ("qrels.test.with-comments", "results.test", ["-m", "official"]),
    "out.test.a": ("qrels.test", "results.test", ["-m", "all_trec"]),
    "out.test.aq": ("qrels.test", "results.test", ["-m", "all_trec", "-q"]),
    "out.test.aqc": ("qrels.test", "results.trunc", ["-m", "all_trec", "-q", "-c"]),
    "out.comment.test": ("qrels.comment.test", "results.comment.test", ["-m", "official"]),
    "out.test.meas_params": ("qrels.test", "results.test", MEAS_PARAMS),
}
CHANGED_IN_10 = ("iprec_at_recall_", "11pt_avg")


def published(name: str) -> list[str]:
    expected = "out.test" if name == "out.test.with-comments" else name
    return shared_path("data", "trec_eval", expected).read_text().splitlines()


def run_evaluate(capsys, name: str, *extra: str) -> list[str]:
    qrels, run, options = CASES[name]
    folder = shared_path("data", "trec_eval")
    code = main(["evaluate", "--qrels", str(folder / qrels), "--run", str(folder / run), *options, *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out.splitlines()


@pytest.mark.parametrize("name", sorted(CASES))
def test_float64_reproduces_trec_eval_10_line_for_line(capsys, name):
    assert run_evaluate(capsys, name, "--score-precision", "float64") == published(name)


def pytrec_eval_values(name: str) -> dict[tuple[str, str], float]:
    """pytrec_eval's own iprec_at_recall / 11pt_avg per query for a case (an independent trec_eval 9)."""
    import pytrec_eval

    from evals_repro import metrics as M

    qrels_file, run_file, options = CASES[name]
    folder = shared_path("data", "trec_eval")
    qrels, run = M.read_trec_qrels(folder / qrels_file), M.read_trec_run(folder / run_file)
    specs = {"iprec_at_recall", "11pt_avg"}
    if name == "out.test.meas_params":
        specs = {"iprec_at_recall.0.10,0.20,0.25,0.75,0.50", "11pt_avg.0.25,0.5,0.75"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, specs)
    values = evaluator.evaluate({qid: run.get(qid, {}) for qid in qrels})
    # pytrec_eval gives NaN for a query without results; trec_eval -c counts it as 0.
    return {(key, qid): (0.0 if math.isnan(v) else v) for qid, row in values.items() for key, v in row.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_default_float32_matches_trec_eval_9(capsys, name):
    lines = run_evaluate(capsys, name)
    expected = published(name)
    assert [line.split("\t")[:2] for line in lines] == [line.split("\t")[:2] for line in expected]
    reference = pytrec_eval_values(name)
    for ours, theirs in zip(lines, expected):
        measure, qid, value = ours.split("\t")
        measure = measure.strip()
        if not measure.startswith(CHANGED_IN_10):
            assert ours == theirs
            continue
        key = "11pt_avg" if measure.startswith("11pt_avg") else measure
        if qid == "all":
            per_query = [v for (k, q), v in reference.items() if k == key]
            assert value == f"{sum(per_query) / len(per_query):6.4f}", ours
        else:
            assert value == f"{reference[key, qid]:6.4f}", ours


def test_the_trec_eval_9_and_10_iprec_values_really_differ_here(capsys):
    """The split above is not vacuous: query 301's iprec_at_recall_0.10 is 0.2096 in 9.x, 0.2098 in 10.x."""
    assert "iprec_at_recall_0.10  \t301\t0.2098" in published("out.test.aq")
    assert pytrec_eval_values("out.test.aq")["iprec_at_recall_0.10", "301"] == pytest.approx(0.2096, abs=5e-5)


def test_rag_pair_counts_the_query_judged_with_grade_0_only(capsys):
    """TREC 2024 RAG: 2024-36302 has 36 judgments, all grade 0; trec_eval keeps it (num_q 31)."""
    qrels, run, _ = CASES["out.comment.test"]
    folder = shared_path("data", "trec_eval")
    args = ["evaluate", "--qrels", str(folder / qrels), "--run", str(folder / run), "-q"]
    assert main([*args, "-m", "num_q,map,P.10,ndcg_cut.10,num_rel"]) == 0
    lines = capsys.readouterr().out.splitlines()
    summary = {line.split("\t")[0].strip(): line.split("\t")[2] for line in lines if "\tall\t" in line}
    # out.comment.test prints num_q, map and P_10; ndcg_cut_10 0.5977 is trec_eval 10.0's (issue 10).
    assert summary == {"num_q": "31", "map": "0.2689", "P_10": "0.7710", "ndcg_cut_10": "0.5977", "num_rel": "4463"}
    zero = {line.split("\t")[0].strip(): line.split("\t")[2] for line in lines if "\t2024-36302\t" in line}
    assert zero == {"map": "0.0000", "P_10": "0.0000", "ndcg_cut_10": "0.0000", "num_rel": "0"}


def test_without_complete_queries_lacking_results_are_skipped(capsys):
    """-C (trec_eval 9 without -c): 302 has no results in results.trunc, so the means cover 301 and 303.

    The per-query values do not depend on -c, so each mean must equal the mean of out.test.aqc's
    printed values for 301 and 303 (to its 4 printed decimals)."""
    lines = run_evaluate(capsys, "out.test.aqc", "-C", "--score-precision", "float64")
    printed = {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in lines}
    expected = {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in published("out.test.aqc")}
    assert printed["num_q                 ", "all"] == "2"
    assert not any(qid == "302" for _, qid in printed)
    checked = 0
    for (measure, qid), value in printed.items():
        name = measure.strip()
        if qid != "all" or name in ("runid", "num_q", "gm_map", "gm_bpref") or name.startswith("num_"):
            continue
        mean = (float(expected[measure, "301"]) + float(expected[measure, "303"])) / 2
        assert float(value) == pytest.approx(mean, abs=1.01e-4), name
        checked += 1
    assert checked > 90
    assert printed["num_rel               ", "all"] == str(474 + 10)  # 301's and 303's num_rel only

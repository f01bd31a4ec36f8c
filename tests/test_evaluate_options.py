"""trec_eval's options (-M, -l, -J, -c, -n, -q), score precision, float-gain ties, spellings and inputs,
on hand-computed cases, plus the default protocol against pytrec_eval itself."""

from __future__ import annotations

import gzip
import io
import math
import sys

import pytest

from conftest import shared_path
from evals_repro import metrics as M
from evals_repro.cli import main
from evals_repro.metrics.protocol import ScoringProtocol


def call(capsys, tmp_path, qrels: str, run: str, *args: str) -> tuple[int, dict[tuple[str, str], str], str]:
    (tmp_path / "qrels").write_text(qrels)
    (tmp_path / "run").write_text(run)
    code = main(["evaluate", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), *args])
    out, err = capsys.readouterr()
    printed = {(line.split("\t")[0].strip(), line.split("\t")[1]): line.split("\t")[2] for line in out.splitlines()}
    return code, printed, err


def one_line_error(code: int, err: str, *needles: str) -> None:
    assert code != 0 and err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    for needle in needles:
        assert needle in err


# The case: 0.30000001 and 0.3 are one float32 value, 0.29999999 is not.
TIE_QRELS = "q 0 a 0\nq 0 b 1\nq 0 c 1\n"
TIE_RUN = "q Q0 a 1 0.30000001 t\nq Q0 b 2 0.3 t\nq Q0 c 3 0.29999999 t\n"


def test_score_precision_float32_is_trec_eval_9_and_float64_trec_eval_10(capsys, tmp_path):
    code, printed, _ = call(capsys, tmp_path, TIE_QRELS, TIE_RUN, "-m", "P.1,recip_rank")
    assert code == 0 and (printed["P_1", "all"], printed["recip_rank", "all"]) == ("1.0000", "1.0000")
    code, printed, _ = call(
        capsys, tmp_path, TIE_QRELS, TIE_RUN, "-m", "P.1,recip_rank", "--score-precision", "float64"
    )
    assert code == 0 and (printed["P_1", "all"], printed["recip_rank", "all"]) == ("0.0000", "0.5000")
    qrels, run = M.read_trec_qrels(tmp_path / "qrels"), M.read_trec_run(tmp_path / "run")
    for precision, expected in (("float32", 1.0), ("float64", 0.5)):
        protocol = ScoringProtocol(measures=("mrr", "mrr_at_1", "judged_at_1"), score_precision=precision)
        scores = M.evaluate(qrels, run, protocol)["q"]
        assert scores == {"mrr": expected, "mrr_at_1": 1.0 if expected == 1.0 else 0.0, "judged_at_1": 1.0}
    code, _, err = call(capsys, tmp_path, TIE_QRELS, TIE_RUN, "--score-precision", "float16")
    one_line_error(code, err, "'float16' is not one of", "float64")


def test_max_results_cuts_in_the_protocol_order(capsys, tmp_path):
    qrels = "q 0 r 1\n"
    run = "q Q0 a 1 0.9 t\nq Q0 b 2 0.8 t\nq Q0 r 3 0.7 t\nq Q0 c 4 0.6 t\n"
    code, full, _ = call(capsys, tmp_path, qrels, run, "-m", "P.5,num_ret,recall.5,recip_rank,relstring", "-q")
    assert code == 0
    assert (full["P_5", "all"], full["num_ret", "all"], full["recip_rank", "all"]) == ("0.2000", "4", "0.3333")
    assert full["relstring", "q"] == "'--1-'"
    code, cut, _ = call(
        capsys, tmp_path, qrels, run, "-m", "P.5,num_ret,recall.5,recip_rank,relstring", "-q", "-M", "2"
    )
    assert (cut["P_5", "all"], cut["num_ret", "all"], cut["recall_5", "all"]) == ("0.0000", "2", "0.0000")
    assert cut["recip_rank", "all"] == "0.0000" and cut["relstring", "q"] == "'--'"
    # At the cut, a (0.5 + 1e-9) and r (0.5) tie in float32: r (> a) is kept; float64 keeps a.
    tied = "q Q0 a 1 0.500000001 t\nq Q0 r 2 0.5 t\n"
    _, kept32, _ = call(capsys, tmp_path, qrels, tied, "-m", "P.1,judged_at_1", "-M", "1", "--trec-names")
    _, kept64, _ = call(capsys, tmp_path, qrels, tied, "-m", "P.1", "-M", "1", "--score-precision", "float64")
    assert (kept32["P_1", "all"], kept32["judged_1", "all"], kept64["P_1", "all"]) == ("1.0000", "1.0000", "0.0000")
    code, _, err = call(capsys, tmp_path, qrels, run, "-M", "0")
    one_line_error(code, err, "max results per query (-M) 0 must be an integer >= 1")


def test_relevance_level(capsys, tmp_path):
    qrels = "q 0 a 1\nq 0 b 2\nq 0 c 0\n"
    run = "q Q0 a 1 0.9 t\nq Q0 b 2 0.8 t\nq Q0 c 3 0.7 t\n"
    names = "P.1,num_rel,num_rel_ret,map,recip_rank"
    _, level1, _ = call(capsys, tmp_path, qrels, run, "-m", names)
    assert [level1[n, "all"] for n in ("P_1", "num_rel", "num_rel_ret", "map", "recip_rank")] == [
        "1.0000", "2", "2", "1.0000", "1.0000",
    ]  # fmt: skip
    _, level2, _ = call(capsys, tmp_path, qrels, run, "-m", names, "-l", "2", "-C")
    # Only b (grade 2) is relevant now, at rank 2: AP = (1/2) / 1.
    assert [level2[n, "all"] for n in ("P_1", "num_rel", "num_rel_ret", "map", "recip_rank")] == [
        "0.0000", "1", "1", "0.5000", "0.5000",
    ]  # fmt: skip
    # With -c (our default) trec_eval 9 and 10 both print as `all` num_rel every judgment with a grade > 0,
    # whatever -l says (a and b: 2), though the query's own line says 1.
    _, complete, _ = call(capsys, tmp_path, qrels, run, "-m", names, "-l", "2", "-q")
    assert (complete["num_rel", "q"], complete["num_rel", "all"], complete["map", "all"]) == ("1", "2", "0.5000")


def test_judged_only_drops_unjudged_documents_first(capsys, tmp_path):
    qrels = "q 0 r 1\nq 0 n 0\n"
    run = "q Q0 u 1 0.9 t\nq Q0 r 2 0.8 t\nq Q0 n 3 0.7 t\n"
    names = "P.1,num_ret,recip_rank,unj.5,judged_at_3,rbp_resid"
    _, plain, _ = call(capsys, tmp_path, qrels, run, "-m", names, "--trec-names")
    assert [plain[n, "all"] for n in ("P_1", "num_ret", "recip_rank", "unj_5", "judged_3")] == [
        "0.0000", "3", "0.5000", "0.2000", "0.6667",
    ]  # fmt: skip
    # rbp_resid: the unjudged u at rank 0 weighs (1 - 0.9) * 0.9^0, plus 0.9^3 for what lies beyond rank 3.
    assert plain["rbp_resid", "all"] == f"{0.1 + 0.9**3:6.4f}"
    _, judged, _ = call(capsys, tmp_path, qrels, run, "-m", names, "-J", "--trec-names")
    assert [judged[n, "all"] for n in ("P_1", "num_ret", "recip_rank", "unj_5", "judged_3", "rbp_resid")] == [
        "1.0000", "2", "1.0000", "0.0000", "1.0000", "0.0000",
    ]  # fmt: skip


def test_no_summary_and_per_query(capsys, tmp_path):
    qrels = "q1 0 a 1\nq2 0 b 1\n"
    run = "q1 Q0 a 1 0.9 t\nq2 Q0 x 1 0.9 t\n"
    code, printed, _ = call(capsys, tmp_path, qrels, run, "-m", "P.1", "-q", "-n")
    assert code == 0 and printed == {("P_1", "q1"): "1.0000", ("P_1", "q2"): "0.0000"}
    code, printed, _ = call(capsys, tmp_path, qrels, run, "-m", "P.1", "-n")
    assert code == 0 and printed == {}


def test_tie_rule_without_gains_is_refused(capsys, tmp_path):
    code, _, err = call(capsys, tmp_path, "q 0 a 1\n", "q Q0 a 1 1 t\n", "--tie-rule", "doc-id")
    one_line_error(code, err, "--tie-rule applies only to float-gain measures", "pass --gains FILE")


def test_float_gains_compare_scores_as_given_under_every_rule(capsys, tmp_path):
    (tmp_path / "gains").write_text("q 0 a 1.0\nq 0 b 0.0\n")
    gains = ["--gains", str(tmp_path / "gains"), "-m", "ndcg_float_at_1"]
    run = "q Q0 a 1 0.30000001 t\nq Q0 b 2 0.3 t\n"  # one float32 value, two doubles
    for rule in ("group-mean", "doc-id", "input-order"):
        code, printed, _ = call(capsys, tmp_path, "q 0 a 1\n", run, *gains, "--tie-rule", rule)
        assert code == 0 and printed["ndcg_float_at_1", "all"] == "1.0000", rule
    # An exact tie listed b first: input order keeps b first, doc id puts b (> a) first, group-mean credits 0.5.
    tied = "q Q0 b 1 0.5 t\nq Q0 a 2 0.5 t\n"
    expected = {"input-order": "0.0000", "doc-id": "0.0000", "group-mean": "0.5000"}
    for rule, value in expected.items():
        _, printed, _ = call(capsys, tmp_path, "q 0 a 1\n", tied, *gains, "--tie-rule", rule)
        assert printed["ndcg_float_at_1", "all"] == value, rule
    # rcp-ndcg's spelling of the rule: the library takes it, the CLI names its own spelling in one line.
    from evals_repro.metrics.published.ndcg_float import ndcg_float_at_k

    assert ndcg_float_at_k({"a": 0.5, "b": 0.5}, {"a": 1.0}, 1, "input_order") == 1.0
    code, _, err = call(
        capsys, tmp_path, "q 0 a 1\n", "q Q0 a 1 0.5 t\nq Q0 b 2 0.5 t\n", *gains, "--tie-rule", "input_order"
    )
    one_line_error(code, err, "'input_order' is not one of", "'input-order'")


def test_measure_spellings_and_printed_names(capsys, tmp_path):
    qrels, run = "q 0 a 1\n", "q Q0 a 1 0.9 t\nq Q0 b 2 0.8 t\n"
    trec = ["-m", "ndcg_cut.10", "-m", "P.5,10", "-m", "P_5", "-m", "recip_rank", "-m", "map_cut.100"]
    code, printed, _ = call(capsys, tmp_path, qrels, run, *trec)
    assert code == 0
    # trec_eval's spellings print trec_eval's names, in trec_eval's order, without an unasked num_q.
    assert list(printed) == [(n, "all") for n in ("recip_rank", "P_5", "P_10", "ndcg_cut_10", "map_cut_100")]
    _, printed, _ = call(capsys, tmp_path, qrels, run, *trec, "--our-names")
    assert list(printed) == [(n, "all") for n in ("mrr", "p_at_5", "p_at_10", "ndcg_at_10", "map_at_100")]
    _, printed, _ = call(capsys, tmp_path, qrels, run, "-m", "ndcg_at_10,P@5")
    assert list(printed) == [("num_q", "all"), ("ndcg_at_10", "all"), ("p_at_5", "all")]
    _, printed, _ = call(capsys, tmp_path, qrels, run, "-m", "ndcg_at_10,P@5", "--trec-names")
    assert list(printed) == [("num_q", "all"), ("ndcg_cut_10", "all"), ("P_5", "all")]
    _, printed, _ = call(capsys, tmp_path, qrels, run, "-m", "official")
    assert printed["runid", "all"] == "t" and printed["num_q", "all"] == "1"
    assert len([k for k in printed if k[0].startswith("iprec_at_recall")]) == 11


def test_stdin_and_gzip_runs(capsys, tmp_path, monkeypatch):
    (tmp_path / "qrels").write_text("q 0 a 1\n")
    (tmp_path / "run.gz").write_bytes(gzip.compress(b"q Q0 b 1 0.9 t\nq Q0 a 2 0.8 t extra fields\n"))
    args = ["evaluate", "--qrels", str(tmp_path / "qrels"), "-m", "recip_rank"]
    assert main([*args, "--run", str(tmp_path / "run.gz")]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{'recip_rank':<22}\tall\t0.5000"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"# from a pipe\nq Q0 a 1 0.9 t\n")))
    assert main([*args, "--run", "-"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{'recip_rank':<22}\tall\t1.0000"]


def test_subtopic_qrels_through_the_command(capsys):
    folder = shared_path("data", "ndeval")
    args = ["evaluate", "--subtopic-qrels", str(folder / "pyndeval_readme.qrels")]
    assert (
        main([*args, "--run", str(folder / "pyndeval_readme.run"), "-m", "alpha_ndcg_at_10,err_ia_at_20,p_at_5"]) == 0
    )
    printed = {line.split("\t")[0].strip(): float(line.split("\t")[2]) for line in capsys.readouterr().out.splitlines()}
    assert printed["alpha_ndcg_at_10"] == pytest.approx(0.7868, abs=1e-4)  # pyndeval's published values
    assert printed["err_ia_at_20"] == pytest.approx(0.3907, abs=1e-4)
    assert printed["p_at_5"] == pytest.approx(0.6)  # flat qrels from the subtopics: A, D, B relevant


def test_default_protocol_equals_pytrec_eval_on_every_measure_it_has():
    """float32 is pytrec_eval's ranking: on trec_eval's test files every value pytrec_eval computes is identical."""
    import pytrec_eval

    folder = shared_path("data", "trec_eval")
    qrels, run = M.read_trec_qrels(folder / "qrels.test"), M.read_trec_run(folder / "results.trunc")
    names = [m for m in M.parse_measures(["all_trec"]) if not M.get_measure(m).text]
    for level in (1, 2):
        ours = M.evaluate(qrels, run, ScoringProtocol(measures=tuple(names), relevance_level=level))
        theirs = pytrec_eval.RelevanceEvaluator(qrels, pytrec_eval.supported_measures, relevance_level=level).evaluate(
            {qid: run.get(qid, {}) for qid in qrels}
        )
        compared = 0
        for qid, row in ours.items():
            for name, value in row.items():
                measure = M.get_measure(name)
                key = {"gm_map": "map", "gm_bpref": "bpref"}.get(measure.trec_name, measure.trec_name)
                if key not in theirs[qid]:
                    continue  # rbp, rbp_resid, unj: trec_eval 10 only
                expected = theirs[qid][key]
                if math.isnan(expected):  # iprec_at_recall / 11pt_avg of 302, which has no results
                    assert value == 0.0 and not run.get(qid)
                    continue
                assert value == expected, (level, qid, name)
                compared += 1
        assert compared > 250


def test_max_results_and_judged_only_are_refused_for_float_gains(capsys, tmp_path):
    (tmp_path / "gains").write_text("q 0 a 1.0\n")
    for option in (["-M", "5"], ["-J"]):
        code, _, err = call(
            capsys, tmp_path, "q 0 a 1\n", "q Q0 a 1 1 t\n", "--gains", str(tmp_path / "gains"), *option
        )
        one_line_error(code, err, "-M / -J do not apply to float-gain measures")

"""`evals-repro evaluate` on hand-made files: the -c rule, output layout, and one-line errors."""

from __future__ import annotations

from evals_repro.cli import main

QRELS = "q1 0 a 1\nq1 0 b 0\nq2 0 c 2\nq3 0 z 0\n"
RUN = "q1 Q0 a 1 0.9 t\nq1 Q0 b 2 0.3 t\nq9 Q0 a 1 0.5 t\n"


def files(tmp_path, qrels=QRELS, run=RUN):
    (tmp_path / "qrels").write_text(qrels)
    (tmp_path / "run").write_text(run)
    return ["--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run")]


def call(capsys, args):
    code = main(["evaluate", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_every_judged_query_counts_as_trec_eval_c(tmp_path, capsys):
    # q1 is perfect, q2 has qrels but no results, q3 is judged with grade 0 only, q9 has no qrels.
    code, lines, err = call(capsys, [*files(tmp_path), "-q", "-m", "p_at_1", "-m", "ndcg_at_10"])
    assert code == 0
    assert lines == [
        f"{'p_at_1':<22}\tq1\t1.0000",
        f"{'ndcg_at_10':<22}\tq1\t1.0000",
        f"{'p_at_1':<22}\tq2\t0.0000",
        f"{'ndcg_at_10':<22}\tq2\t0.0000",
        f"{'p_at_1':<22}\tq3\t0.0000",
        f"{'ndcg_at_10':<22}\tq3\t0.0000",
        f"{'num_q':<22}\tall\t3",
        f"{'p_at_1':<22}\tall\t0.3333",  # trec_eval -c: 1.0 over 3 judged queries
        f"{'ndcg_at_10':<22}\tall\t0.3333",
    ]
    assert "warning: 2 of 3 judged queries have no results" in err and "q2" in err


def test_trec_names_flag(tmp_path, capsys):
    code, lines, _ = call(capsys, [*files(tmp_path), "--trec-names", "-m", "P@1,recall_at_100,mrr"])
    assert code == 0
    assert [line.split("\t")[0].strip() for line in lines] == ["num_q", "P_1", "recall_100", "recip_rank"]


def assert_one_line_error(code, lines, err, *needles):
    assert code != 0
    assert lines == []
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err


def test_unknown_measure(tmp_path, capsys):
    code, lines, err = call(capsys, [*files(tmp_path), "-m", "ndcg_at_10,ndcg@ten"])
    assert_one_line_error(code, lines, err, "unknown measure 'ndcg@ten'", "ndcg_at_{k}")


def test_garbled_run_line(tmp_path, capsys):
    code, lines, err = call(capsys, files(tmp_path, run=RUN + "q2 Q0 c 1 0.7\n"))
    assert_one_line_error(code, lines, err, f"{tmp_path / 'run'}:4: expected at least 6 columns, got 5")


def test_missing_file(tmp_path, capsys):
    args = ["--qrels", str(tmp_path / "missing"), "--run", str(tmp_path / "run")]
    code, lines, err = call(capsys, args)
    assert_one_line_error(code, lines, err, "missing: qrels file not found")


def test_qrels_without_a_relevant_document_score_zero_with_a_warning(tmp_path, capsys):
    code, lines, err = call(capsys, [*files(tmp_path, qrels="q1 0 a 0\n"), "-m", "p_at_1"])
    assert code == 0
    assert lines == [f"{'num_q':<22}\tall\t1", f"{'p_at_1':<22}\tall\t0.0000"]
    assert "warning: no judged query has a relevant document (grade >= 1)" in err


def test_qrels_with_comments_only(tmp_path, capsys):
    code, lines, err = call(capsys, files(tmp_path, qrels="# nothing judged\n\n"))
    assert_one_line_error(code, lines, err, "qrels file is empty")

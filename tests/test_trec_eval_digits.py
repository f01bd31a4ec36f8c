"""trec_eval's own arithmetic and `-m` reading, to the last printed digit (issue 23.1, 23.2).

The reference values are trec_eval 9.0.7's and 10.0's output on these inputs (as given in the issue); every
summary the project prints uses the same running double sum, checked on the report helpers too.
"""

from __future__ import annotations

import pytest

from evals_repro.cli import main
from evals_repro.metrics.protocol import running_mean, running_sum

# Three queries with two relevant documents, one with one; the run retrieves exactly them (score 1).
QRELS = "a 0 x 1\na 0 y 1\nb 0 x 1\nb 0 y 1\nc 0 x 1\nc 0 y 1\nd 0 x 1\n"
RUN = "".join(
    f"{q} Q0 {d} 1 1 r\n"
    for q, d in [("a", "x"), ("a", "y"), ("b", "x"), ("b", "y"), ("c", "x"), ("c", "y"), ("d", "x")]
)


def evaluate(tmp_path, capsys, *args):
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    code = main(["evaluate", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return [line.split("\t") for line in out.splitlines()]


def test_the_all_mean_is_added_one_value_at_a_time(tmp_path, capsys):
    # P_200 per query: .01, .01, .01, .005. trec_eval 9 and 10 print 0.0087 (a running double sum gives
    # 0.008749999999999999); Python 3.12's compensated sum() gives 0.00875, printed 0.0088.
    lines = evaluate(tmp_path, capsys, "-m", "P.200")
    assert [[cell.strip() for cell in line] for line in lines] == [["P_200", "all", "0.0087"]]


def test_running_sum_is_not_compensated():
    import numpy as np

    values = [0.01, 0.01, 0.01, 0.005]
    assert running_sum(values) == np.cumsum(values)[-1] == 0.034999999999999996  # cumsum adds in order
    assert sum(values) == 0.035
    assert f"{running_mean(values):6.4f}" == "0.0087"


@pytest.mark.parametrize(
    "module, function",
    [("evals_repro.reporting.report", "_mean"), ("evals_repro.study.quality_table", "_mean")],
)
def test_report_tables_average_the_same_way(module, function):
    """A report's `avg` column is the running mean too: 0.87 x100 at two decimals, not 0.88."""
    mean = getattr(__import__(module, fromlist=[function]), function)
    assert f"{100 * mean([0.01, 0.01, 0.01, 0.005]):.2f}" == "0.87"


def test_the_library_mean_averages_the_same_way():
    from evals_repro.metrics import mean

    per_query = {q: {"p_at_200": v} for q, v in zip("abcd", [0.01, 0.01, 0.01, 0.005])}
    assert mean(per_query)["p_at_200"] == 0.008749999999999999


def names(lines):
    return [line[0].strip() for line in lines]


def test_a_measure_named_again_takes_the_new_parameters(tmp_path, capsys):
    # trec_eval -m all_trec -m P.5 prints P_5 only (the parameters replace P's default cutoffs).
    shown = names(evaluate(tmp_path, capsys, "-m", "all_trec", "-m", "P.5"))
    assert [n for n in shown if n.startswith("P_")] == ["P_5"]
    assert "recall_1000" in shown and "map" in shown  # the rest of all_trec keeps its defaults


def test_relstring_with_parameters_replaces_the_default_one(tmp_path, capsys):
    shown = names(evaluate(tmp_path, capsys, "-q", "-m", "all_trec", "-m", "relstring.3"))
    assert "relstring_3" in shown and "relstring" not in shown


def test_the_first_parameters_given_win_as_in_meas_init(tmp_path, capsys):
    # usnistgov/trec_eval f425365 (10.0): trec_eval.c add_meas_arg_info appends each `-m name.params` to
    # epi->meas_arg in command-line order; meas_init.c te_init_meas_a_double_cut_long walks that list from
    # the start, `if (0 == strcmp(meas_arg_ptr->measure_name, tm->name))` reads the parameters and `break`s.
    # So the first given wins: the binary built from that commit prints P_5 alone for `-m P.5 -m P.10`,
    # P_10 alone for `-m P -m P.10`, and for `-m all_trec -m P.5` the same lines as evaluate, byte for byte.
    assert names(evaluate(tmp_path, capsys, "-m", "P.5", "-m", "P.10")) == ["P_5"]
    assert names(evaluate(tmp_path, capsys, "-m", "P", "-m", "P.10")) == ["P_10"]


def test_our_names_are_still_added(tmp_path, capsys):
    shown = names(evaluate(tmp_path, capsys, "-m", "P.5", "-m", "p_at_10"))
    assert shown == ["num_q", "p_at_5", "p_at_10"]


def test_a_result_record_adds_its_queries_in_trec_eval_order():
    """The means a result record stores (and `report` prints) are trec_eval's on the saved run and qrels.

    trec_eval sorts the queries by id before adding them, so with the issue's qrels it prints P_200 0.0087
    (trec_eval 10.0, usnistgov/trec_eval f425365, built and run on these files: 0.0087 whichever order the
    lines come in). A benchmark that lists query d first used to add 0.005 first: 0.035 / 4, printed 0.0088.
    """
    from evals_repro.base.data import Page, Query, Subset
    from evals_repro.metrics.protocol import ScoringProtocol
    from evals_repro.runner.scoring import score_run

    qrels: dict[str, dict[str, int]] = {}
    for line in QRELS.splitlines():
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(grade)
    queries = [Query(qid, f"query {qid}", "en") for qid in ["d", "a", "b", "c"]]  # not in id order
    subset = Subset("b", "s", "en", [Page("x", "x"), Page("y", "y")], queries, qrels)
    run = {qid: dict.fromkeys(docs, 1.0) for qid, docs in qrels.items()}
    scored = score_run(subset, run, queries, ["en"], ScoringProtocol(measures=("p_at_200",)))
    assert scored["languages"]["en"].metrics["p_at_200"] == 0.008749999999999999
    assert f"{scored['metrics']['p_at_200']:.4f}" == "0.0087"
    assert f"{100 * scored['metrics']['p_at_200']:.2f}" == "0.87"  # the report's cell


def test_breakdown_adds_each_result_in_trec_eval_order():
    """`report --by` over one result is trec_eval's mean over that group's queries: 0.0087, not 0.0088."""
    from types import SimpleNamespace

    from evals_repro.records.results import QueryEntry
    from evals_repro.reporting.breakdown import breakdown

    values = {"d": 0.005, "a": 0.01, "b": 0.01, "c": 0.01}  # stored in the benchmark's order, d first
    per_query = {
        q: QueryEntry(language="en", metadata={"query_format": "k"}, metrics={"p_at_200": v}) for q, v in values.items()
    }
    (row,) = breakdown([SimpleNamespace(per_query=per_query)], "query_format", "p_at_200")  # type: ignore[list-item]
    assert row.mean == 0.008749999999999999 and f"{row.mean:.4f}" == "0.0087"

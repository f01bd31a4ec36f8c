"""`report --methods`, the baseline row, the bold best values, the refused combinations of options and the
comparisons' intervals, on hand-made result records (per-query scores chosen here, no run needed)."""

from __future__ import annotations

import csv
import json
import re

import pytest

from evals_repro.cli import main
from records import write_record
from reference_stats import exact_randomization_p, reference_holm

NATIVE = {"heat-pumps": "english", "railway-maintenance": "french", "clinical-trials": "english"}


def write_method(root, method: str, scores: dict[str, list[float]], *measures: str) -> None:
    """One result per subset given: its per-query scores (queries q0, q1, ...) and their mean, the same for each
    measure (default ndcg_at_10)."""
    measures = measures or ("ndcg_at_10",)
    for subset, values in scores.items():
        language = NATIVE[subset]
        write_record(
            root / "sample" / method / f"{subset}.json",
            benchmark="sample",
            subset=subset,
            method=method,
            native_language=language,
            languages={language: dict.fromkeys(measures, sum(values) / len(values))},
            per_query={f"{subset}-q{i}": dict.fromkeys(measures, v) for i, v in enumerate(values)},
        )


def report(root, *extra: str) -> list[str]:
    return ["report", "-b", "sample", "--results-dir", str(root), *extra]


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def rows_of(text: str, title: str) -> list[list[str]]:
    """The body rows (cells) of the table whose heading contains `title`."""
    block = next(part for part in re.split(r"^#+ ", text, flags=re.M) if part and title in part.splitlines()[0])
    lines = [line for line in block.splitlines() if line.startswith("| ") and not line.startswith("| method")]
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """Methods a, b, c on every subset, ten queries each: c best everywhere, then b, then a."""
    root = tmp_path_factory.mktemp("three")
    for k, method in enumerate(("a", "b", "c")):
        write_method(root, method, {s: [0.2 + 0.1 * k + 0.01 * i for i in range(10)] for s in NATIVE})
    return root


def test_methods_choose_and_order_the_rows_of_every_table(three, capsys):
    """`--methods c,a`: the tables show c then a (not alphabetical, no b), comparisons and breakdowns too."""
    assert main(report(three, "--methods", "c,a")) == 0
    text = capsys.readouterr().out
    assert [row[0] for row in rows_of(text, "monolingual")] == ["c", "a"]
    assert main(report(three, "--methods", "c", "--methods", "a", "--baseline", "a", "--permutations", "500")) == 0
    text = capsys.readouterr().out
    assert [row[0] for row in rows_of(text, "monolingual")] == ["c", "a (baseline)"]
    compared = [row for row in rows_of(text, "monolingual") + rows_of(text, "Paired") if len(row) == 11]
    assert {(row[0], row[1]) for row in compared} == {("c", "a")}
    assert main(report(three, "--methods", "c,a", "--by", "query_type")) == 0
    titles = [line for line in capsys.readouterr().out.splitlines() if line.startswith("### ")]
    assert titles == [
        "### sample — c — monolingual — by query_type (clinical-trials, heat-pumps, railway-maintenance)",
        "### sample — a — monolingual — by query_type (clinical-trials, heat-pumps, railway-maintenance)",
    ]


def test_methods_without_results_or_hidden_are_refused(three, tmp_path, capsys):
    assert main(report(three, "--methods", "c,zz")) == 2
    line = error_line(capsys)
    assert "--methods zz: no results of sample for it" in line and "choose from a, b, c" in line
    assert main(report(three, "--methods", "c,a", "--baseline", "b")) == 2
    assert "--baseline b is not among --methods c,a" in error_line(capsys)
    write_record(
        tmp_path / "sample" / "a+r" / "heat-pumps.json",
        benchmark="sample",
        subset="heat-pumps",
        method="a+r",
        native_language="english",
        languages={"english": {"ndcg_at_10": 0.5}},
        first_stage="a",
        reranked=True,
    )
    assert main(report(tmp_path, "--methods", "a+r", "--first-stage-only")) == 2
    line = error_line(capsys)
    assert "--methods a+r: reranked, and --first-stage-only hides reranked methods" in line


def test_best_value_per_column_is_bold_ties_as_printed(tmp_path, capsys):
    """heat-pumps: a 0.4531 and b 0.4529 both print 45.3, the column's best: both bold; c's 30.0 not. With two
    decimals they print 45.31 and 45.29: only a. railway-maintenance has one value (a's): nothing to be best
    among, no bold. clinical-trials: c's 90.0. avg: only a has every subset, so one value, no bold."""
    write_method(
        tmp_path, "a", {"heat-pumps": [0.4531] * 2, "railway-maintenance": [0.1] * 2, "clinical-trials": [0.5] * 2}
    )
    write_method(tmp_path, "b", {"heat-pumps": [0.4529] * 2, "clinical-trials": [0.6] * 2})
    write_method(tmp_path, "c", {"heat-pumps": [0.30] * 2, "clinical-trials": [0.9] * 2})
    assert main(report(tmp_path)) == 0
    text = capsys.readouterr().out
    assert rows_of(text, "monolingual") == [
        ["a", "**45.3**", "10.0", "50.0", "35.1"],  # avg (45.31 + 10 + 50) / 3
        ["b", "**45.3**", "", "60.0", ""],
        ["c", "30.0", "", "**90.0**", ""],
    ]
    assert "Bold: each column's best value as printed; every method tied at it is bold." in text
    assert main(report(tmp_path, "--decimals", "2")) == 0
    assert [row[1] for row in rows_of(capsys.readouterr().out, "monolingual")] == ["**45.31**", "45.29", "30.00"]


def test_a_measure_without_a_better_side_bolds_nothing(tmp_path, capsys):
    """judged_at_10 (the share of the top 10 that was judged) is a diagnostic: the higher one is not "best"."""
    write_method(tmp_path, "a", {s: [0.5] * 2 for s in NATIVE}, "judged_at_10")
    write_method(tmp_path, "b", {s: [0.9] * 2 for s in NATIVE}, "judged_at_10")
    assert main(report(tmp_path, "-m", "judged_at_10")) == 0
    text = capsys.readouterr().out
    assert "**" not in text and "Bold:" not in text and "| b | 90.0 |" in text


def test_ignored_options_are_refused(three, capsys):
    assert main(report(three, "--baseline", "a", "--compare")) == 2
    assert "--baseline a and --compare are two kinds of comparison" in error_line(capsys)
    assert main(report(three, "--permutations", "100")) == 2
    line = error_line(capsys)
    assert "--permutations sets the randomization test of --baseline/--compare, and neither is given" in line
    assert main(report(three, "--seed", "7")) == 2
    assert "--seed seeds the draws of --baseline/--compare and of the plots' intervals" in error_line(capsys)
    assert main(["report", "--help"]) == 0
    assert ".html (one self-contained page" in " ".join(capsys.readouterr().out.split()).replace("│ ", "")


@pytest.mark.parametrize(
    "option, comparisons",
    [(["--baseline", "a"], 8), (["--compare"], 12)],  # 2 methods against a, or 3 pairs; x 4 columns
)
def test_too_few_permutations_for_the_family_are_refused_at_the_exact_minimum(three, capsys, option, comparisons):
    """The smallest p is 1 / (1 + B), and Holm multiplies it by the table's m comparisons: m / (1 + B) < 0.05 needs
    B >= 20 m, so 160 for 8 comparisons (8/161 = 0.0497) and 240 for 12; one fewer is refused, saying why."""
    fewest = 20 * comparisons
    assert main(report(three, *option, "--permutations", str(fewest - 1))) == 2
    line = error_line(capsys)
    assert (
        f"--permutations {fewest - 1} cannot show any difference at p < 0.05 after Holm's adjustment over the "
        f"{comparisons} comparisons of table 'sample — monolingual — ndcg_at_10 (x100)': the smallest p it can "
        f"give, 1/{fewest}, times {comparisons} is 0.05" in line
    )
    assert f"use --permutations {fewest} or more" in line
    assert main(report(three, *option, "--permutations", str(fewest))) == 0
    assert "▲" in capsys.readouterr().out  # c is better than a on every cell: reachable, and reached


# Per-query differences x - base (base 0.5 everywhere). heat-pumps: sum -0.8, and 50 of the 1,024 sign patterns
# reach |sum| >= 0.8 (enumerated by `exact_randomization_p`): p = 0.0488. Before intervals followed Holm, its
# 95% bootstrap interval was [-13.5, -2.0], excluding 0, beside a Holm-adjusted p of 0.19 and no marker.
DIFFERENCES = {
    "heat-pumps": [-0.2, -0.1, -0.15, 0.05, -0.1, -0.05, -0.2, 0.1, -0.1, -0.05],
    "railway-maintenance": [0.1, -0.1, 0.05, 0.0, -0.05, 0.1, -0.1, 0.05, 0.0, -0.05],
    "clinical-trials": [0.2, -0.2, 0.1, -0.1, 0.0, 0.3, -0.3, 0.1, -0.1, 0.0],
}


def test_an_interval_excludes_0_exactly_when_the_difference_is_marked(tmp_path, capsys):
    """The constructed case: heat-pumps' p = 50/1024 = 0.0488 is significant alone but not after Holm over the 4
    comparisons (0.195), so nothing is marked and Holm tests every comparison at 0.05 / 4: each interval is the
    test inverted at 98.75%, checked here against all 2^10 (2^30 for avg) sign patterns of the shifted
    differences: just inside each bound the exact p is at least 0.0125, just outside at most (Monte Carlo
    tolerance). heat-pumps' interval now holds 0, as its missing marker says."""
    write_method(tmp_path, "base", {s: [0.5] * 10 for s in DIFFERENCES})
    write_method(tmp_path, "x", {s: [0.5 + d for d in v] for s, v in DIFFERENCES.items()})
    out = tmp_path / "cmp.csv"
    assert main(report(tmp_path, "--baseline", "base", "-o", str(out))) == 0
    text = capsys.readouterr().out
    rows = [r for r in csv.DictReader(out.open()) if "monolingual" in r["table"]]
    assert [r["column"] for r in rows] == ["heat-pumps", "railway-maintenance", "clinical-trials", "avg"]
    assert exact_randomization_p(DIFFERENCES["heat-pumps"]) == 50 / 1024
    heat = rows[0]
    assert float(heat["diff"]) == pytest.approx(-8.0, abs=1e-9)
    assert float(heat["p_adjusted"]) == pytest.approx(reference_holm([float(r["p"]) for r in rows])[0], rel=1e-5)
    assert float(heat["p_adjusted"]) > 0.05 and heat["verdict"] == ""
    assert float(heat["low"]) < 0 < float(heat["high"])
    assert "| x | base | heat-pumps | -8.0 | [" in text and "▼ |" not in text and "▼" not in rows_of(text, "mono")[1][1]
    tolerance = 4 * (0.0125 * 0.9875 / 10_000) ** 0.5 + 2 / 10_000
    for r in rows:
        assert r["level"] == "98.75%"
        differences = DIFFERENCES.get(r["column"]) or [d / 3 * 3 for v in DIFFERENCES.values() for d in v]
        for bound, inward in ((float(r["low"]) / 100, 1e-6), (float(r["high"]) / 100, -1e-6)):
            inside = exact_randomization_p([d - (bound + inward) for d in differences])
            outside = exact_randomization_p([d - (bound - inward) for d in differences])
            assert inside >= 0.0125 - tolerance and outside <= 0.0125 + tolerance, (r["column"], bound)


def test_bars_show_the_baseline_and_its_markers(three):
    """b and c are a + 0.1 and a + 0.2 on every query: on a subset only the two all-alike sign patterns of ten
    reach the observed sum (p = 2/1024), on avg two of 2^30, so Holm over the 8 comparisons keeps every one below
    0.05: eight ▲, one above each b and c bar (the middle and right bar of each group of three). a's bars are
    hatched and its value dashed across each group; the legend says what the marks and the line are."""
    from evals_repro.benchmarks import get_benchmark
    from evals_repro.reporting.bundle import build_bundle
    from evals_repro.reporting.plots import close

    bundle = build_bundle(three, get_benchmark("sample"), ["ndcg_at_10"], baseline="a", permutations=500, figures=True)
    try:
        (bars,) = [f for f in bundle.figures if f.name == "sample-monolingual-ndcg_at_10-bars"]
        ax = bars.figure.axes[0]
        marks = [t for t in ax.texts if t.get_text() in ("▲", "▼")]
        assert [t.get_text() for t in marks] == ["▲"] * 8
        width = 0.8 / 3
        expected = sorted(group - 0.4 + width * (k + 0.5) for group in range(4) for k in (1, 2))
        assert sorted(t.get_position()[0] for t in marks) == pytest.approx(expected)
        assert [t.get_text() for t in ax.get_legend().get_texts()] == [
            "a (baseline)", "b", "c", "a's value", "better than a (p < 0.05, Holm over 8)"
        ]  # fmt: skip
        hatches = [patch.get_hatch() for patch in ax.patches]
        assert hatches == ["///"] * 4 + [None] * 8  # a's four bars, then b's and c's
        dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
        assert len(dashed) == 4
        for line, bar in zip(dashed, ax.patches[:4]):
            assert line.get_ydata()[0] == pytest.approx(bar.get_height())
    finally:
        close(bundle.figures)


def test_plots_dir_removes_only_the_figures_it_wrote_earlier(tmp_path, capsys):
    """Run 1 draws ndcg_at_10 and recall_at_10 bars; run 2 only ndcg_at_10: the recall figure (PNG and SVG, listed
    in the directory's manifest) goes, and nothing the manifest does not list is touched: the user's notes, a
    figure an earlier version left, a manifest entry outside the directory. An unreadable manifest removes
    nothing, and says so."""
    from evals_repro.reporting.plots import MANIFEST

    results, plots = tmp_path / "r", tmp_path / "plots"
    for k, method in enumerate(("a", "b")):
        write_method(results, method, {s: [0.3 + 0.1 * k] * 2 for s in NATIVE}, "ndcg_at_10", "recall_at_10")
    plots.mkdir()
    (plots / "notes.txt").write_text("mine\n")
    (plots / "sample-crosslingual-ndcg_at_10-a-languages.png").write_bytes(b"older version")
    (tmp_path / "outside.png").write_bytes(b"not in the directory")
    assert main(report(results, "-m", "ndcg_at_10,recall_at_10", "--plots", str(plots))) == 0
    capsys.readouterr()
    ndcg = {"sample-monolingual-ndcg_at_10-bars.png", "sample-monolingual-ndcg_at_10-bars.svg"}
    recall = {"sample-monolingual-recall_at_10-bars.png", "sample-monolingual-recall_at_10-bars.svg"}
    mine = {"notes.txt", "sample-crosslingual-ndcg_at_10-a-languages.png", MANIFEST}
    assert {p.name for p in plots.iterdir()} == ndcg | recall | mine
    listed = json.loads((plots / MANIFEST).read_text())
    listed["files"] += ["../outside.png", "notes.txt"]
    (plots / MANIFEST).write_text(json.dumps(listed))
    assert main(report(results, "--plots", str(plots))) == 0
    err = capsys.readouterr().err
    assert f"removed 2 plot files written there earlier that no figure replaces: {', '.join(sorted(recall))}" in err
    assert {p.name for p in plots.iterdir()} == ndcg | mine and (tmp_path / "outside.png").exists()
    assert json.loads((plots / MANIFEST).read_text())["files"] == sorted(ndcg)
    assert (plots / "notes.txt").read_text() == "mine\n"
    (plots / MANIFEST).write_text("{")
    (plots / "sample-monolingual-recall_at_10-bars.png").write_bytes(b"kept: no manifest says it is ours")
    assert main(report(results, "--plots", str(plots))) == 0
    err = capsys.readouterr().err
    assert f"note: {plots / MANIFEST} is unreadable" in err and "no figure written earlier was removed" in err
    assert (plots / "sample-monolingual-recall_at_10-bars.png").exists() and "removed 2" not in err
    assert json.loads((plots / MANIFEST).read_text())["files"] == sorted(ndcg)


def test_html_protocol_reads_in_words_and_names_what_the_methods_disagree_on(three, tmp_path):
    """The page's protocol gives each scoring field in words (no Python True, False or None), and a field the
    results disagree on lists each value with its methods (before, such results showed no scoring rows at all)."""
    import html as html_module
    import shutil

    root = tmp_path / "r"
    shutil.copytree(three, root)
    fields = {"relevance_level": 1, "max_results": None, "judged_only": False, "complete": True}
    for method, identical in (("a", False), ("b", False), ("c", True)):
        for path in (root / "sample" / method).glob("*.json"):
            data = json.loads(path.read_text())
            data["protocol"] |= fields | {"ignore_identical_ids": identical}
            path.write_text(json.dumps(data))
    page = tmp_path / "report.html"
    assert main(report(root, "-o", str(page))) == 0
    text = page.read_text(encoding="utf-8")
    section = text[text.index('<section id="protocol">') : text.index('<section id="provenance">')]
    rows = dict(re.findall(r"<tr><th>([^<]+)</th><td>([^<]*)</td></tr>", html_module.unescape(section)))
    assert not {"True", "False", "None"} & set(rows.values())
    assert rows["scoring: relevance level"] == "a document is relevant at grade 1 or more (trec_eval -l 1)"
    assert rows["scoring: results per query"] == "every retrieved document"
    assert rows["scoring: unjudged documents"] == "kept, counted as not relevant"
    assert rows["scoring: queries without results"] == "count, scoring 0 (trec_eval -c)"
    assert (
        rows["scoring: a document with the query's own id"] == "kept (a, b); dropped before scoring (mteb / BEIR) (c)"
    )


def test_which_measures_have_a_better_side():
    """Quality measures are higher-is-better; counts (num_rel, num_ret) and diagnostics (the share judged or
    unjudged, the ideal DCG of the judgments, RBP's residual) have no best value to bold."""
    from evals_repro.reporting.report import higher_is_better

    assert all(higher_is_better(m) for m in ("ndcg_at_10", "map", "recall_at_100", "mrr_at_10", "ndcg_float_at_10"))
    assert not any(higher_is_better(m) for m in ("num_rel", "num_ret", "judged_at_10", "unj_10", "ideal_dcg"))
    assert higher_is_better("a-study-variant-name")  # not a measure the metrics package parses: a quality score


def test_a_published_row_is_never_ranked_bold():
    """`report --published` rows are printed figures, not methods run here: a higher published value takes no
    bold from the methods, and the rule under the table says so."""
    from evals_repro.reporting.report import Table, to_markdown

    table = Table("t", ["hr", "avg"], [("a", [0.5, 0.5]), ("b", [0.25, 0.75]), ("paper (published: x)", [0.9, 0.9])])
    table.measure = "ndcg_at_10"
    table.references.add("paper (published: x)")
    lines = to_markdown(table).splitlines()
    assert "| a | **50.0** | 50.0 |" in lines
    assert "| b | 25.0 | **75.0** |" in lines
    assert "| paper (published: x) | 90.0 | 90.0 |" in lines
    assert lines[-1].endswith("Published rows are not ranked.")

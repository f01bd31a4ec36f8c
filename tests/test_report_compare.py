"""`report --baseline / --compare` on the bundled sample: markers, legend, CSV columns, bad inputs."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import ttest_rel

from evals_repro.base.registry import METHODS as REGISTRY
from evals_repro.cli import main
from reference_stats import exact_randomization_p, reference_holm

SUBSETS = ("heat-pumps", "railway-maintenance", "clinical-trials")
METHODS = ("bm25", "oracle-a", "oracle-b")


class Oracle:
    """Puts a query's relevant pages at a rank drawn from a hash of (salt, query id): scores that vary by
    query, in milliseconds (a neural method would take minutes here)."""

    def __init__(self, salt: str):
        self.salt = salt

    def run(self, subset, queries, top_k):
        pages = sorted({p for judged in subset.qrels.values() for p in judged})
        run = {}
        for query in queries:
            digest = hashlib.sha256(f"{self.salt}/{query.id}".encode()).digest()
            relevant = sorted(p for p, g in subset.qrels.get(query.id, {}).items() if g > 0)
            others = [p for p in pages if p not in relevant][: 12 - 1]
            at = digest[0] % 12  # rank of the first relevant page (0-based); 11 leaves it out of the top 10
            order = others[:at] + relevant + others[at:]
            run[query.id] = {page: float(len(order) - i) for i, page in enumerate(order[:top_k])}
        return run

    def describe(self):
        return {"oracle": self.salt}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """bm25 and two oracles on every sample subset; heat-pumps crosslingual for all three."""
    root = tmp_path_factory.mktemp("compare")
    common = ["-b", "sample", "--results-dir", str(root / "r"), "--cache-dir", str(root / "c")]
    for salt in ("a", "b"):
        REGISTRY.register(f"oracle-{salt}")(lambda name, ctx, salt=salt: Oracle(salt))
    try:
        for method in METHODS:
            assert main(["run", method, *common]) == 0
            assert main(["run", method, "-s", "heat-pumps", "--setting", "crosslingual", *common]) == 0
    finally:
        for salt in ("a", "b"):
            REGISTRY.unregister(f"oracle-{salt}")
    return root / "r"


def report(results: Path, *extra: str) -> list[str]:
    return ["report", "-b", "sample", "--results-dir", str(results), *extra]


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def record(results: Path, method: str, subset: str) -> dict:
    return json.loads((results / "sample" / method / f"{subset}.json").read_text())


def native_scores(data: dict, measure: str = "ndcg_at_10") -> dict[str, float]:
    return {q: e["metrics"][measure] for q, e in data["per_query"].items() if e["language"] == data["native_language"]}


def plain_table(results: Path, capsys) -> dict[tuple[str, str], float]:
    """(method, column) -> value x100 of the monolingual table that `report` prints without options."""
    assert main(report(results)) == 0
    text = capsys.readouterr().out
    assert "Paired comparisons" not in text and "▲" not in text and "▼" not in text
    mono = text.split("### ")[1]
    lines = [line for line in mono.splitlines() if line.startswith("| ") and not line.startswith("| method")]
    columns = [*SUBSETS, "avg"]
    return {
        (cells[0], column): float(value.strip("*"))  # a column's best value is bold
        for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines)
        for column, value in zip(columns, cells[1:])
    }


def test_baseline_markers_legend_and_csv(results, tmp_path, capsys):
    plain = plain_table(results, capsys)
    out = tmp_path / "cmp.csv"
    assert main(report(results, "--baseline", "bm25", "-o", str(out))) == 0
    text = capsys.readouterr().out
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert list(rows[0]) == [
        "table", "column", "method", "vs", "score", "vs_score", "diff", "low", "high", "level",
        "p", "p_adjusted", "p_ttest", "p_ttest_adjusted", "queries", "verdict",
    ]  # fmt: skip
    mono = [r for r in rows if "monolingual" in r["table"]]
    assert {(r["method"], r["column"]) for r in mono} == {(m, c) for m in METHODS[1:] for c in [*SUBSETS, "avg"]}
    for r in mono:
        assert r["vs"] == "bm25"
        # the difference of the two cells the plain table prints (language means from the result files)
        assert float(r["diff"]) == pytest.approx(
            plain[(r["method"], r["column"])] - plain[("bm25", r["column"])], abs=0.11
        )
        assert float(r["low"]) <= float(r["diff"]) <= float(r["high"])
        assert float(r["p"]) <= float(r["p_adjusted"]) <= min(1.0, float(r["p"]) * len(mono) * 2)
        if r["column"] != "avg":  # one stratum: scipy's paired t-test on the queries of the two result files
            a, b = (
                native_scores(record(results, r["method"], r["column"])),
                native_scores(record(results, "bm25", r["column"])),
            )
            assert int(r["queries"]) == len(a) == len(b)
            expected = ttest_rel([a[q] for q in sorted(a)], [b[q] for q in sorted(a)]).pvalue
            assert float(r["p_ttest"]) == pytest.approx(expected, rel=1e-5)
        else:
            assert int(r["queries"]) == sum(len(native_scores(record(results, "bm25", s))) for s in SUBSETS)
        marked = r["verdict"] != ""
        assert marked == (float(r["p_adjusted"]) < 0.05)
        assert marked == (float(r["low"]) > 0 or float(r["high"]) < 0)  # the interval says what the marker says
        if marked:  # the direction is the sign of the difference (the measures are higher-is-better)
            assert r["verdict"] == ("better" if float(r["diff"]) > 0 else "worse")
        value = f"{plain[(r['method'], r['column'])]:.1f}"
        expected_cell = value + {"better": "▲", "worse": "▼", "": ""}[r["verdict"]]
        row_line = next(line for line in text.split("### ")[1].splitlines() if line.startswith(f"| {r['method']} |"))
        assert expected_cell in [c.strip().replace("**", "") for c in row_line.split("|")]
    assert any(r["verdict"] for r in mono), "the sample has at least one difference at p < 0.05"
    assert "▲ / ▼: better / worse than bm25 at p < 0.05" in text
    assert f"Holm-Bonferroni adjusted over the {len(mono)} comparisons of this table" in text


def test_baseline_imports_no_scipy(results):
    """scipy.special alone costs a third of a second of CPU to import, a tenth of `report --baseline` on 160 result
    files: the t-test's tail is computed without it (`student_t.py`)."""
    code = (
        "import json, sys; from evals_repro.cli import main\n"
        "status = main(sys.argv[1:])\n"
        "print(json.dumps([status, sorted(sys.modules)]), file=sys.stderr)"
    )
    args = report(results, "--baseline", "bm25")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    status, loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert status == 0 and "p (t-test)" in done.stdout
    assert [m for m in loaded if m == "scipy" or m.startswith("scipy.")] == []


def test_crosslingual_cells_pool_every_language(results, tmp_path, capsys):
    out = tmp_path / "cmp.csv"
    assert main(report(results, "--baseline", "bm25", "-o", str(out))) == 0
    rows = [r for r in csv.DictReader(out.open()) if "crosslingual" in r["table"]]
    assert {(r["method"], r["column"]) for r in rows} == {(m, "heat-pumps") for m in METHODS[1:]}
    base = record(results, "bm25", "heat-pumps")
    for r in rows:
        other = record(results, r["method"], "heat-pumps")
        assert int(r["queries"]) == len(base["per_query"]) > len(native_scores(base))
        assert float(r["diff"]) == pytest.approx(
            (other["metrics"]["ndcg_at_10"] - base["metrics"]["ndcg_at_10"]) * 100, abs=1e-3
        )


def test_compare_every_pair_is_the_same_p_on_every_run(results, tmp_path, capsys):
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    assert main(report(results, "--compare", "--permutations", "2000", "-o", str(first))) == 0
    assert main(report(results, "--compare", "--permutations", "2000", "-o", str(second))) == 0
    assert first.read_bytes() == second.read_bytes()
    rows = [r for r in csv.DictReader(first.open()) if "monolingual" in r["table"]]
    pairs = {(r["method"], r["vs"]) for r in rows}
    assert pairs == {("oracle-a", "bm25"), ("oracle-b", "bm25"), ("oracle-b", "oracle-a")}
    assert all(float(r["p"]) >= 1 / 2001 - 1e-9 for r in rows)  # never below 1 / (1 + permutations)
    text = capsys.readouterr().out
    assert "Paired comparisons, every pair" in text and "2,000 permutations" in text


def test_baseline_not_in_results(results, capsys):
    assert main(report(results, "--baseline", "voyage-4")) == 2
    line = one_error_line(capsys)
    assert "--baseline voyage-4 is not a method with results for sample" in line
    assert "choose from bm25, oracle-a, oracle-b" in line


def test_permutations_zero(results, capsys):
    assert main(report(results, "--baseline", "bm25", "--permutations", "0")) == 2
    assert "--permutations 0 must be at least 1" in one_error_line(capsys)


def test_methods_with_different_queries_name_subset_and_counts(results, tmp_path, capsys):
    copy = tmp_path / "r"
    shutil.copytree(results, copy)
    path = copy / "sample" / "oracle-a" / "clinical-trials.json"
    data = json.loads(path.read_text())
    native = sorted(native_scores(data))
    del data["per_query"][native[0]]
    path.write_text(json.dumps(data))
    assert main(report(copy, "--baseline", "bm25")) == 2
    line = one_error_line(capsys)
    assert (
        f"sample/clinical-trials (english): oracle-a has {len(native) - 1} scored queries and bm25 {len(native)}"
        in line
    )
    assert "a paired comparison needs the same queries" in line


def test_by_refuses_comparisons(results, capsys):
    assert main(report(results, "--by", "query_type", "--baseline", "bm25")) == 2
    assert "--by" in one_error_line(capsys)


def test_randomization_p_is_the_exact_test_and_holm_adjusts_every_comparison(results, tmp_path, capsys):
    """Per subset (26 queries), the CLI's p is within Monte Carlo tolerance of the exact p enumerated here
    over all 2^26 sign patterns of the result files' per-query differences; p_adjusted is Holm's step-down
    over the table's raw p-values, recomputed here (not by the package)."""
    out = tmp_path / "cmp.csv"
    assert main(report(results, "--baseline", "bm25", "-o", str(out))) == 0
    rows = [r for r in csv.DictReader(out.open()) if "monolingual" in r["table"]]
    for r in rows:
        if r["column"] == "avg":
            continue
        a = native_scores(record(results, r["method"], r["column"]))
        b = native_scores(record(results, "bm25", r["column"]))
        exact = exact_randomization_p([a[q] - b[q] for q in sorted(b)])
        tolerance = 4 * (exact * (1 - exact) / 10_000) ** 0.5 + 2 / 10_000
        assert float(r["p"]) == pytest.approx(exact, abs=tolerance), (r["method"], r["column"])
    for key in ("p", "p_ttest"):
        expected = reference_holm([float(r[key]) for r in rows])
        assert [float(r[key + "_adjusted"]) for r in rows] == pytest.approx(expected, rel=1e-5)
    assert any(float(r["p_adjusted"]) > float(r["p"]) for r in rows)  # the adjustment did something here


def test_seed_fixes_the_draws_and_another_seed_moves_p_within_monte_carlo_error(results, tmp_path, capsys):
    """`--seed`: the same seed gives the same p and interval bytes; seed 7 gives other draws, so the p of
    each per-subset comparison moves, but stays within Monte Carlo error of the exact p enumerated here
    over all 2^26 sign patterns (and of the seed-42 p). The HTML protocol names the seed in use."""
    permutations = 4000

    def rows(*extra: str) -> list[dict]:
        out = tmp_path / f"{len(list(tmp_path.iterdir()))}.csv"
        assert (
            main(report(results, "--baseline", "bm25", "--permutations", str(permutations), "-o", str(out), *extra))
            == 0
        )
        return [r for r in csv.DictReader(out.open()) if "monolingual" in r["table"]]

    default, again42, seven, again7 = rows(), rows("--seed", "42"), rows("--seed", "7"), rows("--seed", "7")
    drawn = ("p", "p_adjusted", "low", "high")
    assert [[r[k] for k in drawn] for r in default] == [[r[k] for k in drawn] for r in again42]
    assert [[r[k] for k in drawn] for r in seven] == [[r[k] for k in drawn] for r in again7]
    assert [r["diff"] for r in seven] == [r["diff"] for r in default]  # the data's difference: no draw in it
    assert [r["p_ttest"] for r in seven] == [r["p_ttest"] for r in default]
    moved = 0
    for r42, r7 in zip(default, seven):
        assert (r42["method"], r42["column"]) == (r7["method"], r7["column"])
        if r42["column"] == "avg":
            continue
        a = native_scores(record(results, r7["method"], r7["column"]))
        b = native_scores(record(results, "bm25", r7["column"]))
        exact = exact_randomization_p([a[q] - b[q] for q in sorted(b)])
        tolerance = 4 * (exact * (1 - exact) / permutations) ** 0.5 + 2 / permutations
        assert float(r7["p"]) == pytest.approx(exact, abs=tolerance), (r7["method"], r7["column"])
        assert float(r7["p"]) == pytest.approx(float(r42["p"]), abs=2 * tolerance)
        moved += r7["p"] != r42["p"] and 0.01 < exact < 0.99
    assert moved >= 1, "another seed draws other sign patterns: some p with room to move must move"
    assert [(r["low"], r["high"]) for r in seven] != [(r["low"], r["high"]) for r in default]
    page = tmp_path / "report.html"
    assert main(report(results, "--baseline", "bm25", "--permutations", "500", "--seed", "7", "-o", str(page))) == 0
    assert "permutations / bootstrap resamples / seed" in page.read_text()
    assert "500 / 10000 / 7" in page.read_text()


@pytest.mark.parametrize("value", ["-1", "1.5", "x"])
def test_bad_seed_is_one_line_naming_the_option(results, capsys, value):
    assert main(report(results, "--baseline", "bm25", "--seed", value)) == 2
    line = one_error_line(capsys)
    assert "'--seed'" in line or f"--seed {value} must be a whole number of at least 0" in line
    assert "valid integer" in line or value == "-1"

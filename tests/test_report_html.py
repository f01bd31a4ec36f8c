"""`report --plots DIR` and `report -o report.html`: byte-stable figures, and a self-contained page checked in
real headless Chromium (offline, scripts off, every request intercepted)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chromium import chromium_binary, load, non_blank_share
from conftest import in_ci
from evals_repro.cli import main
from evals_repro.reporting.plots import MANIFEST
from test_report_compare import Oracle, report, results  # noqa: F401  (the module-scoped results fixture)

FIGURES = {  # bars per table (the crosslingual one: heat-pumps only), the crosslingual table's language heatmaps
    "sample-monolingual-ndcg_at_10-bars",
    "sample-crosslingual-ndcg_at_10-bars",
    "sample-crosslingual-ndcg_at_10-languages",
}


def browser() -> str:
    found = chromium_binary()
    if found is None:
        message = "chromium is not installed (apt-get install chromium; .ci/run installs it)"
        if in_ci():
            pytest.fail(f"{message}, and CI=true requires it", pytrace=False)
        pytest.skip(message)
    return found


def test_plots_are_png_and_svg_and_the_same_bytes_every_time(results, tmp_path, capsys):  # noqa: F811
    first, second = tmp_path / "a", tmp_path / "b"
    assert main(report(results, "--plots", str(first))) == 0
    assert main(report(results, "--plots", str(second))) == 0
    assert f"wrote 6 plot files (3 figures, PNG and SVG) to {first}" in capsys.readouterr().err
    assert {p.name for p in first.iterdir()} == {f"{f}{s}" for f in FIGURES for s in (".png", ".svg")} | {MANIFEST}
    for path in first.iterdir():
        assert path.read_bytes() == (second / path.name).read_bytes(), path.name
    svg = (first / "sample-monolingual-ndcg_at_10-bars.svg").read_text()
    assert "<dc:date>" not in svg and "Matplotlib v" not in svg  # no date or creator metadata
    assert "<text" not in svg  # text drawn as paths: no font needed to view it
    assert (first / "sample-monolingual-ndcg_at_10-bars.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_plots_intervals_follow_seed_and_the_page_names_it_without_a_baseline(results, tmp_path):  # noqa: F811
    """`--seed` seeds the bars' bootstrap intervals too: `--seed 42` draws the default's bytes, `--seed 7` other
    intervals (the heatmaps, which draw none, stay the same); with no `--baseline`, report.html's protocol still
    names the resamples and seed of the figures it shows."""
    default, again, seven = tmp_path / "default", tmp_path / "42", tmp_path / "7"
    assert main(report(results, "--plots", str(default))) == 0
    assert main(report(results, "--plots", str(again), "--seed", "42")) == 0
    assert main(report(results, "--plots", str(seven), "--seed", "7")) == 0
    for name in FIGURES:
        svg = f"{name}.svg"
        assert (again / svg).read_bytes() == (default / svg).read_bytes(), svg
        drawn = (seven / svg).read_bytes() != (default / svg).read_bytes()
        assert drawn == name.endswith("-bars"), svg
    page = tmp_path / "report.html"
    assert main(report(results, "--seed", "7", "-o", str(page))) == 0
    text = page.read_text()
    assert "plot intervals: bootstrap resamples / seed" in text and "10000 / 7" in text


def test_plots_directory_that_is_a_file(results, tmp_path, capsys):  # noqa: F811
    blocker = tmp_path / "plots"
    blocker.write_text("notes\n")
    assert main(report(results, "--plots", str(blocker))) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and f"--plots {blocker} cannot be used as a directory: it is a file" in lines[0]
    assert "Traceback" not in err and blocker.read_text() == "notes\n"


def test_html_report_renders_offline_in_chromium(results, tmp_path, capsys):  # noqa: F811
    binary = browser()
    page = tmp_path / "report.html"
    assert main(report(results, "--baseline", "bm25", "-o", str(page))) == 0
    text = page.read_text(encoding="utf-8")
    # self-contained: no script, no external reference of any kind; the CSP forbids requests anyway
    assert "<script" not in text and "<link" not in text and "@import" not in text
    references = re.findall(r'\b(?:src|href)\s*=\s*"([^"]*)"', text)
    assert references and all(r.startswith(("#", "data:image/png;base64,")) for r in references)  # in-page only
    assert "default-src 'none'" in text
    assert "▲" in text or "▼" in text  # the markers, as in the Markdown
    n_tables = text.count("<table")
    selectors = [
        "table",
        "figure svg",
        "figcaption",
        "#provenance table",
        "tr.baseline",
        "tr:not(.baseline)",
        "td strong",
    ]
    loaded = load(page, [*selectors, "dl.reading dd"], binary)
    (tmp_path / "report.png").write_bytes(loaded.screenshot)
    assert loaded.requests == [page.resolve().as_uri()] and loaded.blocked == []
    assert loaded.errors == []
    assert len(loaded.boxes["table"]) == n_tables >= 6
    for box in loaded.boxes["table"]:
        assert box.width > 100 and box.height > 20
        assert non_blank_share(loaded.screenshot, box) > 0.05, box
    assert len(loaded.boxes["figure svg"]) == len(FIGURES) == len(loaded.boxes["figcaption"])
    for box in loaded.boxes["figure svg"]:
        assert box.width > 200 and box.height > 150, box
        assert non_blank_share(loaded.screenshot, box) > 0.05, box  # something drawn, not an empty frame
    assert loaded.boxes["#provenance table"]
    # the baseline's row, shaded in both tables; every column's best value in bold, as the Markdown's **x**
    assert len(loaded.boxes["tr.baseline"]) == 2 == text.count("<td>bm25 (baseline)</td>")
    for box in loaded.boxes["tr.baseline"]:
        assert non_blank_share(loaded.screenshot, box) > 0.8, box  # its background, not only its text
    first_other = next(b for b in loaded.boxes["tr:not(.baseline)"] if b.y > loaded.boxes["tr.baseline"][0].y)
    assert non_blank_share(loaded.screenshot, first_other) < 0.5
    assert len(loaded.boxes["td strong"]) == text.count("<strong>") == bundle_bold(text) >= 5
    # what the two kinds of table are, one sentence each, before the tables
    sentences = re.findall(r"<dd>([^<]+)</dd>", text)
    assert len(loaded.boxes["dl.reading dd"]) == len(sentences) == 2
    assert all(s.count(". ") == 0 and s.endswith(".") for s in sentences)
    assert sentences[0].startswith("each subset is scored on its queries in the language its documents")
    assert "every query language of the benchmark" in sentences[1]


def bundle_bold(page: str) -> int:
    """The page's score tables (heading `(x100)`) checked cell by cell: a score is in <strong> exactly when it is
    its column's highest (of two or more); returns how many are."""
    bold = 0
    for table in re.findall(r"\(x100\)</h3>\s*<table>(.*?)</table>", page, flags=re.S):
        rows = [
            re.findall(r'<td class="num">(.*?)</td>', row)
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, flags=re.S)
        ]
        for column in zip(*[r for r in rows if r]):
            values = [float(re.sub(r"<[^>]+>|▲|▼", "", c)) if c else None for c in column]
            top = max((v for v in values if v is not None), default=None)
            several = sum(v is not None for v in values) >= 2
            for cell, value in zip(column, values):
                assert ("<strong>" in cell) == (several and value == top), (cell, column)
                bold += "<strong>" in cell
    return bold


def test_the_chromium_check_catches_requests_errors_and_blank_figures(tmp_path):
    """The harness itself: a page asking for a remote image is caught, and an empty figure reads as blank."""
    binary = browser()
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img src="https://example.com/x.png" alt="x">'
        '<figure><svg width="400" height="300"></svg></figure></body></html>'
    )
    loaded = load(page, ["figure svg"], binary)
    assert loaded.blocked == ["https://example.com/x.png"]
    assert loaded.errors  # the failed image load is reported
    assert non_blank_share(loaded.screenshot, loaded.boxes["figure svg"][0]) < 0.01


def test_html_output_refused_with_by(results, tmp_path, capsys):  # noqa: F811
    assert main(report(results, "--by", "query_type", "-o", str(tmp_path / "r.html"))) == 2
    assert "--by breaks scores down" in capsys.readouterr().err


def _unused(_: Path, __: Oracle) -> None:  # keeps the Oracle import (the fixture's registry entries) explicit
    return None


def test_results_without_per_query_scores_plot_bare_means_and_refuse_comparisons(tmp_path, capsys):
    from records import write_record

    native = {"heat-pumps": "english", "railway-maintenance": "french", "clinical-trials": "english"}
    for method, value in (("a", 0.5), ("b", 0.6)):
        for subset, language in native.items():
            write_record(
                tmp_path / "r" / "sample" / method / f"{subset}.json",
                benchmark="sample",
                subset=subset,
                method=method,
                native_language=language,
                languages={language: {"ndcg_at_10": value}},
            )
    folder = tmp_path / "r"
    assert main(report(folder, "--plots", str(tmp_path / "p"))) == 0
    svg = (tmp_path / "p" / "sample-monolingual-ndcg_at_10-bars.svg").read_text()
    assert svg.startswith("<?xml")
    capsys.readouterr()
    assert main(report(folder, "--baseline", "a")) == 2
    err = capsys.readouterr().err
    assert "error: sample/a/heat-pumps: the result file has no per-query ndcg_at_10 (english queries)" in err


def test_html_report_shows_cost_column_and_spend_in_usd(results, tmp_path, capsys):  # noqa: F811
    """`--cost` puts its column in the page's tables; the spend section gives every method's USD (the sample's
    methods bill nothing: $0), also without --cost; digests get the breakable monospace cell."""
    page = tmp_path / "report.html"
    assert main(report(results, "--baseline", "bm25", "--cost", "-o", str(page))) == 0
    text = page.read_text(encoding="utf-8")
    assert text.count("<th>cost (USD)</th>") == 2  # the monolingual and crosslingual tables
    assert main(report(results, "--baseline", "bm25", "-o", str(page))) == 0
    text = page.read_text(encoding="utf-8")
    assert "cost (USD)" not in text
    for method in ("bm25", "oracle-a", "oracle-b"):
        assert f"<tr><th>spent by {method}</th><td>$0</td></tr>" in text
    assert re.search(r'<td class="long">[0-9a-f]{64}</td>', text)


def test_language_heatmaps_share_one_labelled_colour_scale(results, tmp_path):  # noqa: F811
    """The crosslingual table's heatmaps are one figure: a panel per method (the baseline's says so), every image
    on the same colour range, one colour bar labelled with the measure. The range is that of the per-language
    means in the result files (read here), widened to multiples of 5. A subset the method is marked on carries
    its marker after the name, as the comparisons CSV says."""
    import csv
    import json
    import math

    from evals_repro.benchmarks import get_benchmark
    from evals_repro.reporting.bundle import build_bundle
    from evals_repro.reporting.plots import close

    out = tmp_path / "cmp.csv"
    assert main(report(results, "--baseline", "bm25", "--permutations", "2000", "-o", str(out))) == 0
    verdicts = {r["method"]: r["verdict"] for r in csv.DictReader(out.open()) if "crosslingual" in r["table"]}
    means = [
        block["metrics"]["ndcg_at_10"] * 100
        for method in ("bm25", "oracle-a", "oracle-b")
        for block in json.loads((results / "sample" / method / "heat-pumps.json").read_text())["languages"].values()
    ]
    expected = (5 * math.floor(min(means) / 5), 5 * math.ceil(max(means) / 5))
    bundle = build_bundle(
        results, get_benchmark("sample"), ["ndcg_at_10"], tie_rule="group-mean", baseline="bm25",
        permutations=2000, figures=True,
    )  # fmt: skip
    try:
        (figure,) = [f.figure for f in bundle.figures if f.name == "sample-crosslingual-ndcg_at_10-languages"]
        panels = [ax for ax in figure.axes if ax.images]
        assert [ax.get_title() for ax in panels] == ["bm25 (baseline)", "oracle-a", "oracle-b"]
        assert {ax.images[0].get_clim() for ax in panels} == {expected}
        (bar,) = [ax for ax in figure.axes if not ax.images and ax.get_ylabel()]
        assert bar.get_ylabel() == "ndcg_at_10 (x100)" and bar.get_ylim() == pytest.approx(expected)
        for ax, method in zip(panels[1:], ("oracle-a", "oracle-b")):
            mark = {"better": " ▲", "worse": " ▼", "": ""}[verdicts[method]]
            assert [t.get_text() for t in ax.get_xticklabels()] == [f"heat-pumps{mark}"]
    finally:
        close(bundle.figures)

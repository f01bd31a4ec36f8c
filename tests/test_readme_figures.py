"""The README's reference figures on `sample` are the reference: each method is run through the CLI and the
report must print exactly the README's nDCG@10 x 100, monolingual and crosslingual, subset by subset.

The expected values are read from README.md, never from the code under test. BM25 runs in the default suite;
the two neural rows embed 426 texts each (about two CPU-minutes together), so they carry the `figures` marker:
`uv run pytest -m figures tests/test_readme_figures.py` (CI runs them, see .ci/run).
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from evals_repro.cli import main

ROOT = Path(__file__).resolve().parents[1]


def readme_figures() -> tuple[list[str], dict[str, list[dict[str, tuple[str, str]]]]]:
    """(subsets, method -> its rows: subset -> (mono, cross)) from the README's reference table; a row named
    `method (where)` is another machine's figures of the same method (the README says why they differ)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("Reference figures on `sample`", 1)[1].splitlines()
    start = next(i for i, line in enumerate(section) if line.startswith("|"))
    lines = []
    for line in section[start:]:  # the table right after the heading line, up to its first non-table line
        if not line.startswith("|"):
            break
        lines.append(line)
    header, rows = lines[0], lines[2:]
    subsets = [cell.strip().removesuffix(" mono / cross") for cell in header.strip("|").split("|")[1:]]
    figures: dict[str, list[dict[str, tuple[str, str]]]] = {}
    for row in rows:
        method, *cells = [cell.strip() for cell in row.strip("|").split("|")]
        pairs = [tuple(part.strip() for part in cell.split("/")) for cell in cells]
        figures.setdefault(method.split(" (")[0], []).append(
            {subset: (pair[0], pair[1]) for subset, pair in zip(subsets, pairs)}
        )
    return subsets, figures


SUBSETS, FIGURES = readme_figures()


def test_the_readme_table_is_what_this_test_reads():
    assert SUBSETS == ["heat-pumps", "railway-maintenance", "clinical-trials"]
    assert list(FIGURES) == ["bm25", "minilm", "multilingual-e5-small"]
    assert [len(rows) for rows in FIGURES.values()] == [1, 1, 2]  # e5: this machine's or the other machines' row
    assert all(
        re.fullmatch(r"\d+\.\d", v) for rows in FIGURES.values() for row in rows for pair in row.values() for v in pair
    )


def _tables(report: str) -> dict[str, dict[str, dict[str, str]]]:
    """setting -> method -> subset -> the printed cell, from `report`'s Markdown (a column's best value is bold:
    the number without its asterisks)."""
    tables: dict[str, dict[str, dict[str, str]]] = {}
    for block in report.split("### ")[1:]:
        setting = block.split(" — ")[1]
        lines = [line for line in block.splitlines() if line.startswith("|")]
        columns = [c.strip() for c in lines[0].strip("|").split("|")]
        for line in lines[2:]:
            cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
            tables.setdefault(setting, {})[cells[0]] = dict(zip(columns[1:], cells[1:]))
    return tables


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("figures")


def _printed(root: Path, method: str) -> dict[str, dict[str, dict[str, str]]]:
    places = ["--results-dir", str(root / "results"), "--cache-dir", str(root / "cache")]
    assert main(["run", method, "-b", "sample", "--setting", "crosslingual", *places]) == 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["report", "-b", "sample", "--results-dir", str(root / "results")]) == 0
    return _tables(out.getvalue())


NEURAL = pytest.mark.figures


@pytest.mark.parametrize("method", [pytest.param(m, marks=() if m == "bm25" else (NEURAL,)) for m in FIGURES])
def test_report_prints_the_readme_figures(workspace, method):
    printed = _printed(workspace, method)
    expected = [({s: row[s][0] for s in SUBSETS}, {s: row[s][1] for s in SUBSETS}) for row in FIGURES[method]]
    got = (
        {s: printed["monolingual"][method][s] for s in SUBSETS},
        {s: printed["crosslingual"][method][s] for s in SUBSETS},
    )
    assert got in expected, (got, expected)

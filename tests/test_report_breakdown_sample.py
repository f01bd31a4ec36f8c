"""`report --by` on the bundled sample: the loaders' metadata reach the breakdown, and -o x.csv writes CSV."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

from evals_repro.cli import main

SAMPLE = Path(__file__).resolve().parents[1] / "benchmarks" / "sample"
NATIVE = {"heat-pumps": "english", "railway-maintenance": "french", "clinical-trials": "english"}


def expected_counts(subsets=tuple(NATIVE), native_only=True) -> Counter:
    """Query types of the judged (native-language) queries, read straight from the sample's files."""
    counts: Counter = Counter()
    for subset in subsets:
        language = NATIVE[subset]
        judged = {line.split("\t")[0] for line in (SAMPLE / subset / "qrels" / "test.tsv").read_text().splitlines()[1:]}
        for line in (SAMPLE / subset / "queries.jsonl").read_text().splitlines():
            query = json.loads(line)
            if (query["language"] == language or not native_only) and query["_id"] in judged:
                value = query["metadata"]["query_type"]
                counts.update(value if isinstance(value, list) else [value])
    return counts


def test_breakdown_by_query_type_on_sample(tmp_path, capsys):
    results = ["--results-dir", str(tmp_path / "r")]
    assert main(["run", "bm25", "-b", "sample", "--cache-dir", str(tmp_path / "c"), *results]) == 0
    capsys.readouterr()
    out_csv = tmp_path / "by-type.csv"
    assert main(["report", "-b", "sample", "--by", "query_type", "-o", str(out_csv), *results]) == 0
    printed = capsys.readouterr().out
    assert "(none)" not in printed
    expected = expected_counts()
    assert len(expected) >= 3
    for value, count in expected.items():
        assert f"| {value} | {count} |" in printed
    rows = list(csv.reader(io.StringIO(out_csv.read_text())))
    assert rows[0] == ["table", "query_type", "queries", "ndcg_at_10 (x100)"]
    assert {(r[1], int(r[2])) for r in rows[1:]} == set(expected.items())
    assert all(0.0 <= float(r[3]) <= 100.0 for r in rows[1:])


def test_breakdown_never_pools_settings(tmp_path, capsys):
    """One subset run crosslingual, two monolingual: the monolingual table holds the native queries of
    all three, the crosslingual one every language of the crosslingual subset only."""
    results = ["--results-dir", str(tmp_path / "r")]
    common = ["-b", "sample", "--cache-dir", str(tmp_path / "c"), *results]
    assert main(["run", "bm25", "-s", "heat-pumps", "--setting", "crosslingual", *common]) == 0
    assert main(["run", "bm25", "-s", "railway-maintenance,clinical-trials", *common]) == 0
    capsys.readouterr()
    assert main(["report", "-b", "sample", "--by", "query_type", *results]) == 0
    printed = capsys.readouterr().out
    mono, cross = printed.split("### ")[1:]
    assert mono.startswith(
        "sample — bm25 — monolingual — by query_type (clinical-trials, heat-pumps, railway-maintenance)"
    )
    assert cross.startswith("sample — bm25 — crosslingual — by query_type (heat-pumps)")
    for table, expected in ((mono, expected_counts()), (cross, expected_counts(["heat-pumps"], native_only=False))):
        for value, count in expected.items():
            assert f"| {value} | {count} |" in table
    assert sum(expected_counts(["heat-pumps"], native_only=False).values()) > sum(
        expected_counts(["heat-pumps"]).values()
    )

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


def expected_counts() -> Counter:
    """Query types of the judged native-language queries, read straight from the sample's files."""
    counts: Counter = Counter()
    for subset, language in NATIVE.items():
        judged = {line.split("\t")[0] for line in (SAMPLE / subset / "qrels" / "test.tsv").read_text().splitlines()[1:]}
        for line in (SAMPLE / subset / "queries.jsonl").read_text().splitlines():
            query = json.loads(line)
            if query["language"] == language and query["_id"] in judged:
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

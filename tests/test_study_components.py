"""A reranker of the user's own that breaks its contract in `rerank-study quality` or `latency`: the command
stops at once, exit 5, on the component's one line, the line `evals-repro run` ends on for the same failure
(tests/test_plugin_contracts.py does the same with an installed entry-point plugin). It used to be counted
as a failed request, the phase went on sending, and the command exited 3 as for a provider's failure
(which stays 3: tests/test_study.py::test_quality_failures_exit_3_through_the_cli).

The reranker is a Python object registered as `evals_repro.run` registers one (methods/plugins.object_entry),
so it is wrapped and checked exactly as an entry-point plugin's reranker is (BilledReranker, base/contracts.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from evals_repro.base.registry import RERANKERS
from evals_repro.cli import main
from evals_repro.methods.plugins import object_entry
from evals_repro.study.latency import LATENCY, WARMUP
from evals_repro.study.quality import QUALITY

SAMPLE = Path(__file__).resolve().parents[1] / "benchmarks" / "sample"
BROKEN_QUERY = "hp-q05-en"  # the query the reranker breaks on (English: a heat-pumps query the study froze)


class Misranks:
    """Shorter pages first (score = -characters), broken as `mode` says from its `after`-th call on, or on the
    query `on` only; counts its calls."""

    name = "misranks"
    model = "chars"

    def __init__(self, mode: str, on: str | None = None, after: int = 0) -> None:
        self.mode, self.on, self.after = mode, on, after
        self.calls = 0
        self.lock = threading.Lock()

    def rerank(self, query, documents):
        with self.lock:
            self.calls += 1
            call = self.calls
        scores = [-float(len(d)) for d in documents]
        if (self.on is not None and query != self.on) or call <= self.after:
            return scores
        if self.mode == "nan":
            return [float("nan"), *scores[1:]]
        if self.mode == "short":
            return scores[:-1]
        if self.mode == "raise":
            raise IndexError("list index out of range")
        return scores

    def describe(self):
        return {"model": self.model}  # the same whatever its mode: a fixed reranker reuses the rows


@contextmanager
def installed(reranker: Misranks) -> Iterator[None]:
    with RERANKERS.temporarily(object_entry("reranker", "misranks", reranker)):
        yield


def query_text(qid: str) -> str:
    rows = (json.loads(line) for line in (SAMPLE / "heat-pumps" / "queries.jsonl").read_text().splitlines())
    return next(row["text"] for row in rows if row["_id"] == qid)


def excerpt(text: str) -> str:
    """How a contract message quotes a query: its first 31 characters and an ellipsis past 32 (contracts.py)."""
    assert len(text) > 32 and "  " not in text
    return repr(text[:31] + "…")


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def last_error(err: str) -> str:
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: ") and "Traceback" not in err, err
    return line


def run_line(tmp_path: Path, reranker: Misranks, capsys) -> str:
    """The last line of `evals-repro run bm25+misranks@100` on heat-pumps (monolingual: the study's native-language
    queries, BM25's top 100 as the study froze them), which must exit 5."""
    folders = ["--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]
    capsys.readouterr()
    with installed(reranker):
        code = main(
            ["run", "bm25+misranks@100", "-b", "sample", "-s", "heat-pumps", "--setting", "monolingual", *folders]
        )
    err = capsys.readouterr().err
    assert code == 5, err
    return last_error(err)


@pytest.mark.parametrize("mode", ["nan", "short", "raise"])
def test_a_broken_reranker_stops_quality_at_once_with_exit_5_and_runs_line(study, tmp_path, capsys, mode):
    query = query_text(BROKEN_QUERY)
    folders = ["--study-dir", str(study), "--cache-dir", str(tmp_path / "cache")]
    quality = ["rerank-study", "quality", "--models", "misranks", "-b", "sample", *folders]
    reranker = Misranks(mode, on=query)
    with installed(reranker):
        code = main([*quality, "--quality-workers", "1"])
    err = capsys.readouterr().err
    assert code == 5, err
    line = last_error(err)
    label = line.removeprefix("error: ").split(": rerank() ")[0]
    assert label.startswith("reranker 'misranks' (") and label.endswith("test_study_components:Misranks)")
    documents = len(json.loads(candidate_line(study, BROKEN_QUERY))["ids"])
    what = {
        "nan": f"rerank() returned 1 score(s) that are not finite numbers for the query {excerpt(query)}: "
        "document 0 scored nan: return a finite float per document (NaN and ±inf cannot be ranked)",
        "short": f"rerank() returned {documents - 1} scores for {documents} documents for the query "
        f"{excerpt(query)}: return one float per document, in the documents' order",
        "raise": "rerank() raised IndexError: list index out of range: fix the component (--verbose shows its "
        "traceback)",
    }[mode]
    written = rows(study / QUALITY)
    assert written[-1]["query_id"] == BROKEN_QUERY and written[-1]["status"] == "failed"
    assert line == f"error: {label}: {what}"
    assert written[-1]["error"] == line.removeprefix("error: ")
    # stopped at once: the broken answer is the last call made, every call before it recorded and answered
    assert reranker.calls == len(written) and [r["status"] for r in written[:-1]] == ["ok"] * (len(written) - 1)
    assert "request(s) failed" not in err and "quality: misranks" not in err  # not a provider's failure
    assert err.count(what) == 1  # said once
    assert line == run_line(tmp_path, Misranks(mode, on=query), capsys)  # the line `run` ends on
    # fixed (the same identity): the next run sends only what is left, the broken query included
    with installed(Misranks("none")):
        assert main(quality) == 0
    assert f"quality: {total(study) - len(written) + 1} sent, 0 failed" in capsys.readouterr().err


def candidate_line(study: Path, qid: str) -> str:
    lines = (study / "candidates" / "sample" / "heat-pumps.jsonl").read_text().splitlines()
    return next(line for line in lines if json.loads(line)["query_id"] == qid)


def total(study: Path) -> int:
    manifest = json.loads((study / "manifest.json").read_text())
    return sum(len(entry["query_ids"]) for entry in manifest["datasets"].values())


def test_a_broken_reranker_stops_quality_with_several_workers(study, tmp_path, capsys):
    """Two workers: the one call under way beside the broken one is awaited and recorded, no other is sent."""
    reranker = Misranks("nan", after=5)
    with installed(reranker):
        code = main(["rerank-study", "quality", "--models", "misranks", "--study-dir", str(study)])
    err = capsys.readouterr().err
    assert code == 5, err
    written = rows(study / QUALITY)
    assert reranker.calls == len(written) <= 5 + 2
    assert sum(r["status"] == "failed" for r in written) >= 1 and len(written) < total(study)
    assert "rerank() returned 1 score(s) that are not finite numbers" in last_error(err)


def test_a_broken_reranker_stops_latency_at_once_with_exit_5(study, tmp_path, capsys):
    """The third call (a warm-up or a timed one, as the seeded schedule has it) breaks: nothing more is sent."""
    reranker = Misranks("short", after=2)
    latency = ["rerank-study", "latency", "--models", "misranks", "--samples", "3", "--repeats", "2"]
    with installed(reranker):
        code = main([*latency, "--study-dir", str(study), "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert code == 5, err
    line = last_error(err)
    assert line.startswith("error: reranker 'misranks' (") and " scores for " in line
    calls = rows(study / WARMUP) + rows(study / LATENCY)
    assert reranker.calls == len(calls) == 3
    failed = [r for r in calls if r["status"] != "ok"]
    assert len(failed) == 1 and failed[0]["error"] == line.removeprefix("error: ")
    assert "latency: 1 timed, 0 failed" in err or "latency: 2 timed, 0 failed" in err  # not counted as failed
    assert "request(s) failed" not in err and err.count("scores for") == 1

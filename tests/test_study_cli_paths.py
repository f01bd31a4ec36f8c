"""`rerank-study` as a new user meets it on the command line: what the latency report claims from a
few queries, and what each phase says it spent. Through `evals_repro.cli.main`, against fake providers."""

from __future__ import annotations

import json

import pytest

from evals_repro.cli import main
from fakes.base import count_tokens
from fakes.rerankers import FakeCohereRerank, FakeVoyageRerank


@pytest.fixture
def latency_study(tmp_path, monkeypatch):
    """`rerank-study prepare/latency/report -b sample` through the CLI against a fake Cohere: 3 timed
    queries (one per subset), 2 calls each, no --host-location."""
    study, cache = str(tmp_path / "study"), str(tmp_path / "cache")
    with FakeCohereRerank() as cohere:
        monkeypatch.setenv("CO_API_URL", cohere.url)
        monkeypatch.setenv("COHERE_API_KEY", "k")
        assert main(["rerank-study", "prepare", "-b", "sample", "--study-dir", study, "--cache-dir", cache]) == 0
        latency = ["rerank-study", "latency", "--study-dir", study, "--models", "cohere-pro", "--cache-dir", cache]
        assert main([*latency, "--samples", "3", "--repeats", "2"]) == 0
    plan = json.loads((tmp_path / "study" / "latency-plan.json").read_text())
    assert sorted(len(ids) for ids in plan["queries"]["sample"].values()) == [1, 1, 1]
    assert main(["rerank-study", "report", "--study-dir", study]) == 0
    return tmp_path / "study"


def test_latency_with_one_query_per_subset_shows_no_interval(latency_study):
    """Stratified by subset, one query per subset resamples to the data itself: the report used to print
    `6.3 [6.3, 6.3]`, an interval of zero width that the data cannot give."""
    summary = json.loads((latency_study / "latency-summary.json").read_text())
    mean = summary["models"]["cohere-pro"]["benchmarks"]["sample"]["summary"]["mean"]
    assert mean["low"] is None and mean["high"] is None
    row = next(line for line in (latency_study / "report.md").read_text().splitlines() if line.startswith("| cohere"))
    assert "[n/a: 1 query per subset]" in row


def test_latency_summary_never_records_the_string_none_as_a_host(latency_study):
    """Without --host-location the summary listed a host called "None"."""
    summary = json.loads((latency_study / "latency-summary.json").read_text())
    assert summary["models"]["cohere-pro"]["host_locations"] == ["(not given)"]


def test_rerank_study_quality_and_latency_say_what_they_spent(tmp_path, capsys, monkeypatch):
    """`rerank-study quality` ended with `78 sent, 0 failed, 0 reused`: no tokens, attempts or waits, though
    every call record holds them. The spent line's requests and tokens must match what the provider billed."""
    study, cache = str(tmp_path / "study"), str(tmp_path / "cache")
    with FakeVoyageRerank() as voyage:
        monkeypatch.setenv("VOYAGE_BASE_URL", f"{voyage.url}/v1")
        monkeypatch.setenv("VOYAGE_API_KEY", "k")
        assert main(["rerank-study", "prepare", "-b", "sample", "--study-dir", study, "--cache-dir", cache]) == 0
        common = ["--study-dir", study, "--models", "voyage", "--cache-dir", cache, "--voyage-interval", "0"]
        for phase, extra in (("quality", []), ("latency", ["--samples", "3", "--repeats", "2"])):
            before = len(voyage.requests)
            capsys.readouterr()
            assert main(["rerank-study", phase, *common, *extra]) == 0
            bodies = [r.json for r in voyage.requests[before:] if r.path.endswith("/rerank")]
            billed = sum(
                count_tokens(b["query"]) * len(b["documents"]) + sum(map(count_tokens, b["documents"])) for b in bodies
            )
            line = next(
                x for x in capsys.readouterr().err.splitlines() if x.startswith(f"{phase}: ") and "spent: " in x
            )
            spent = dict(item.rsplit(" ", 1) for item in line.split("spent: ")[1].split(", "))
            assert int(spent["requests"].replace(",", "")) == len(bodies) > 0, line
            assert int(spent["tokens"].replace(",", "")) == billed, line

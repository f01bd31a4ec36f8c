"""End to end through the lead's runner: a store first stage reranked by Cohere, all against fakes."""

from __future__ import annotations

import json

import pytest

from beir_folder import write_beir_folder
from evals_repro.base.errors import UsageError
from evals_repro.benchmarks.registry import get_benchmark
from evals_repro.reporting.report import build_tables, to_markdown
from evals_repro.runner.evaluation import run_benchmark
from evals_repro.runner.run_request import RunRequest
from evals_repro.stores.upload import upload_benchmark
from fakes.mixedbread_store import FakeMixedbreadStores
from fakes.rerankers import FakeCohereRerank

PAGES = {
    "h1": "heat pumps move heat from outside air into the house",
    "h2": "ground source heat pumps use buried pipes",
    "h3": "gas boilers burn fuel to heat water",
    "h4": "insulation keeps heat inside the walls",
    "h5": "solar thermal panels heat water on the roof",
    "h6": "a refrigerant circulates in the heat pump cycle",
}
QUERIES = {"q1": "how do heat pumps move heat", "q2": "buried pipes ground source", "q3": "refrigerant cycle"}
QRELS = [("q1", "h1", 2), ("q1", "h6", 1), ("q2", "h2", 2), ("q3", "h6", 2)]


@pytest.fixture
def fakes(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the default --cache-dir (journals of paid calls) is ./cache
    with FakeMixedbreadStores(polls_to_complete=1) as store, FakeCohereRerank() as cohere:
        monkeypatch.setenv("MIXEDBREAD_BASE_URL", store.url)
        monkeypatch.setenv("MXBAI_API_KEY", "test-key")
        monkeypatch.setenv("CO_API_URL", cohere.url)
        monkeypatch.setenv("CO_API_KEY", "test-key")
        yield store, cohere


def _folder(tmp_path):
    return write_beir_folder(tmp_path / "energy", PAGES, QUERIES, QRELS)


def _reranked_run(benchmark, subsets, tmp_path, depth=3, top_k=5):
    upload_benchmark(benchmark, "markdown", subsets, workers=2, options={"timeout": 5}, cache_dir=tmp_path / "cache")
    request = RunRequest(
        method=f"mixedbread-markdown+cohere@{depth}",
        benchmark=benchmark,
        subsets=subsets,
        top_k=top_k,
        results_dir=tmp_path / "results",
        cache_dir=tmp_path / "cache",
        options={"timeout": 5, "workers": 2},
    )
    return run_benchmark(request, echo=lambda line: None)


def test_reranked_run_writes_the_named_result_and_report_hides_it(fakes, tmp_path):
    store, cohere = fakes
    benchmark = _folder(tmp_path)
    summary = _reranked_run(benchmark, None, tmp_path)
    assert summary.method == "mixedbread-markdown+cohere@3"
    path = tmp_path / "results" / "energy" / "mixedbread-markdown+cohere@3" / "energy.json"
    result = json.loads(path.read_text())
    assert result["method"] == "mixedbread-markdown+cohere@3" and result["reranked"] is True
    assert result["first_stage"] == "mixedbread-markdown"
    retriever = result["config"]["retriever"]
    assert retriever["rerank_depth"] == 3 and retriever["reranker"]["model"] == "rerank-v4.0-pro"
    assert retriever["first_stage"]["stores"] == {"energy": "energy-eval-energy-markdown"}
    assert result["flags"]["meaningful_depth"] == 3
    assert result["usage"]["cohere_requests"] == len(QUERIES)
    assert result["usage"]["rerank_documents"] == 3 * len(QUERIES)
    # Every query sent exactly its top-3 store candidates to Cohere.
    assert all(len(r.json["documents"]) == 3 for r in cohere.requests)

    first = run_benchmark(
        RunRequest(
            method="mixedbread-markdown",
            benchmark=benchmark,
            top_k=5,
            results_dir=tmp_path / "results",
            cache_dir=tmp_path / "cache",
            options={"timeout": 5},
        ),
        echo=lambda _: None,
    )
    assert first.method == "mixedbread-markdown"
    shown = to_markdown(build_tables(tmp_path / "results", "energy", ["energy"])[0])
    assert "| mixedbread-markdown |" in shown and "| mixedbread-markdown+cohere@3 |" in shown
    assert shown.index("| mixedbread-markdown |") < shown.index("| mixedbread-markdown+cohere@3 |")
    hidden = to_markdown(build_tables(tmp_path / "results", "energy", ["energy"], first_stage_only=True)[0])
    assert "+cohere@3" not in hidden and "| mixedbread-markdown |" in hidden


def test_depth_over_top_k_stops_before_any_rerank(fakes, tmp_path):
    store, cohere = fakes
    benchmark = _folder(tmp_path)
    with pytest.raises(UsageError) as info:
        _reranked_run(benchmark, None, tmp_path, depth=10, top_k=5)
    assert "rerank depth 10 is larger than the first stage's top-k 5" in info.value.one_line()
    assert cohere.requests == []


def test_reranked_run_on_sample(fakes, tmp_path):
    decl = get_benchmark("sample")
    subset = decl.subset_names[0]
    summary = _reranked_run("sample", [subset], tmp_path, depth=10, top_k=20)
    path = tmp_path / "results" / "sample" / "mixedbread-markdown+cohere@10" / f"{subset}.json"
    assert summary.outcomes[0].path == path
    assert json.loads(path.read_text())["method"] == "mixedbread-markdown+cohere@10"

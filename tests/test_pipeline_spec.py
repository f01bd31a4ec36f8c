"""The pipeline spec: one typed value from a method name or the CLI options; label and report group derived."""

from __future__ import annotations

import json

import pytest

import scripted_method
from evals_repro.base.errors import UsageError
from evals_repro.base.registry import METHODS, RERANKERS
from evals_repro.cli import main
from evals_repro.methods.pipeline import PipelineSpec, RerankSpec


@pytest.mark.parametrize(
    ("name", "first_stage", "rerank", "label", "group"),
    [
        ("bm25", ("bm25",), None, "bm25", "bm25"),
        ("bm25+minilm", ("bm25",), RerankSpec("minilm", None, 50), "bm25+minilm@50", "bm25"),
        ("rrf:bm25+minilm", ("bm25", "minilm"), None, "rrf:bm25+minilm", "rrf:bm25+minilm"),
        ("rrf:bm25+minilm+cohere@20", ("bm25", "minilm"), RerankSpec("cohere", None, 20), None, "rrf:bm25+minilm"),
        ("mixedbread-markdown+rerank", ("mixedbread-markdown+rerank",), None, None, "mixedbread-markdown"),
        (
            "mixedbread-markdown+rerank+voyage:rerank-2.5-lite@10",
            ("mixedbread-markdown+rerank",),
            RerankSpec("voyage", "rerank-2.5-lite", 10),
            None,
            "mixedbread-markdown",
        ),
        ("rrf:bm25+mixedbread-markdown+rerank", ("bm25", "mixedbread-markdown+rerank"), None, None, None),
    ],
)
def test_method_names(name, first_stage, rerank, label, group):
    spec = PipelineSpec.parse(name)
    assert spec.first_stage == first_stage and spec.rerank == rerank
    assert spec.label == (label or name)
    assert spec.report_group == (group or name)


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("bm25+cohere@50+voyage@10", "only one reranker"),
        ("nosuch", "unknown method 'nosuch'"),
        ("bm25+nosuch@5", "unknown reranker 'nosuch'"),
        ("rrf:bm25", "at least two"),
        ("bm25+cohere@many", "'many' is not a number"),
        ("bm25+cohere@0", "at least 1"),
        ("bm25+cohere:rerank-9@5", "unknown model 'rerank-9' for reranker cohere"),
    ],
)
def test_bad_method_names_are_one_line(name, needle):
    with pytest.raises(UsageError) as info:
        PipelineSpec.parse(name)
    assert needle in info.value.one_line()


def test_cli_options_build_the_same_spec_as_the_name():
    assert PipelineSpec.from_options("rrf:bm25+minilm", rerank="cohere:rerank-v4.0-fast", rerank_depth=30) == (
        PipelineSpec.parse("rrf:bm25+minilm+cohere:rerank-v4.0-fast@30")
    )
    with pytest.raises(UsageError, match="already has a reranker"):
        PipelineSpec.from_options("bm25+cohere@5", rerank="voyage")


def test_pooled_view_reranks_the_pool_and_needs_no_first_stage():
    spec = PipelineSpec.parse("voyage-4+cohere@50").for_pooled_view()
    assert spec.label == "pool+cohere" and spec.key_envs() == ["COHERE_API_KEY"]
    assert PipelineSpec.parse("voyage-4").for_pooled_view().label == "voyage-4"  # first stages retrieve the corpus
    assert PipelineSpec.parse("voyage-multimodal-3.5", "images").label == "voyage-multimodal-3.5[images]"


def test_rrf_then_a_reranker_runs_end_to_end(tmp_path, monkeypatch, registered):
    """`rrf:s1+s2` reranked by a scripted reranker, written under the label the spec derives."""
    data = tmp_path / "bench" / "alpha"
    (data / "qrels").mkdir(parents=True)
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i}", "text": f"text d{i}"}) + "\n" for i in range(3))
    )
    (data / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "one"}) + "\n")
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    for name in ("s1", "s2"):
        registered(METHODS, name, scripted_method.build)
    registered(RERANKERS, "scripted", scripted_method.build_reranker)
    monkeypatch.setattr(scripted_method, "SCRIPT", {"q1": ["d0", "d1", "d2"]})
    monkeypatch.setattr(scripted_method, "FAIL_ON_SUBSET", set())
    monkeypatch.setattr(scripted_method, "RERANK_SCRIPT", {"one": {"d0": 0.1, "d1": 0.2}})
    monkeypatch.setattr(scripted_method, "RERANK_CALLS", [])
    args = ["--benchmark", str(tmp_path / "bench"), "--results-dir", str(tmp_path / "r")]
    assert main(["run", "rrf:s1+s2", "--rerank", "scripted", "--rerank-depth", "2", *args]) == 0
    assert scripted_method.RERANK_CALLS == [("one", ["d0", "d1"])]  # the fused top 2, in fused order
    path = tmp_path / "r/bench/rrf%3As1+s2+scripted@2/alpha.json"
    record = json.loads(path.read_text())
    assert record["first_stage"] == "rrf:s1+s2" and record["reranked"] is True
    assert record["config"]["pipeline"]["first_stage"] == ["s1", "s2"]
    assert record["config"]["pipeline"]["reranker"] == {"name": "scripted", "model": None, "depth": 2}
    assert record["flags"]["meaningful_depth"] == 2
    assert record["config"]["retriever"]["first_stage"]["method"] == "rrf"
    # reranked d1 > d0, then d2 below the reranked head: the relevant d2 sits at rank 3
    assert record["metrics"]["mrr_at_10"] == pytest.approx(1 / 3)
    # the same method written as a name resumes the same result
    assert main(["run", "rrf:s1+s2+scripted@2", "--resume", *args]) == 0
    assert json.loads(path.read_text())["created"] == record["created"]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"rerank_depth": 30}, "--rerank-depth 30 is the depth of --rerank, and no --rerank is given"),
        ({"method": "bm25+minilm@20", "rerank_depth": 30}, "write the depth in the name (bm25+minilm@30)"),
        ({"rerank_top_k": 5}, "--rerank-top-k applies to"),
        ({"store_prefix": "x"}, "--store-prefix applies to"),
        ({"timeout": -1}, "--timeout"),
        ({"index_ram": "lots"}, "--index-ram"),
    ],
)
def test_the_python_api_refuses_what_the_cli_refuses(tmp_path, kwargs, needle):
    """The checks live in the library, so `evals_repro.run` cannot record an option that changes nothing."""
    import evals_repro

    kwargs = {"method": "bm25", **kwargs}
    with pytest.raises(UsageError) as info:
        evals_repro.run(benchmark="sample", results_dir=tmp_path / "r", cache_dir=tmp_path / "c", **kwargs)
    assert needle in info.value.one_line()
    assert not (tmp_path / "r").exists()  # refused before any work, nothing created

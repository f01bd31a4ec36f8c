"""RerankedRetriever: the head is the reranker's order, the tail keeps the first stage's order below it."""

from __future__ import annotations

import pytest

from evals_repro.base.data import Page, Query, Subset
from evals_repro.base.errors import UsageError
from evals_repro.base.rendering import PageStyle, page_text
from evals_repro.methods.pipeline import PipelineSpec
from evals_repro.metrics.ranking import trec_ranked as ranked
from evals_repro.rerankers.pipeline import RerankedRetriever, merge_reranked


class FixedFirstStage:
    name = "fixed"

    def __init__(self, run):
        self._run = run
        self.calls = []

    def run(self, subset, queries, top_k):
        self.calls.append(top_k)
        return {q.id: dict(ranked(self._run[q.id], top_k)) for q in queries}

    def describe(self):
        return {"method": "fixed"}


class LengthReranker:
    """Scores a document by its length: a predictable, hand-checkable reranker."""

    name = "length"
    model = "chars"

    def __init__(self):
        self.seen = []

    def rerank(self, query, documents):
        self.seen.append((query, list(documents)))
        return [float(len(doc)) for doc in documents]

    def describe(self):
        return {"reranker": "length"}


def _subset():
    pages = [
        Page("a", "x" * 1),
        Page("b", "x" * 5),
        Page("c", "x" * 3, title="T"),
        Page("d", "x" * 9),
        Page("e", "x" * 2),
    ]
    return Subset("toy", "s", "english", pages, [Query("q1", "query one", "english")], {"q1": {"d": 1}})


def test_merge_keeps_tail_order_below_every_reranked_score():
    candidates = [("a", 9.0), ("b", 8.0), ("c", 7.0), ("d", 6.0), ("e", 5.0)]
    merged = merge_reranked(candidates, 2, [0.2, 0.7])
    # Head reranked: b (0.7) above a (0.2); tail c, d, e keep their order, all below 0.2.
    assert [doc for doc, _ in ranked(merged)] == ["b", "a", "c", "d", "e"]
    assert merged["c"] == pytest.approx(0.2 - 1.0 - 1) and merged["e"] == pytest.approx(0.2 - 1.0 - 3)


def test_reranked_retriever_reranks_only_the_depth_with_full_text_and_title():
    first = FixedFirstStage({"q1": {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0, "e": 1.0}})
    reranker = LengthReranker()
    pipeline = RerankedRetriever(first, reranker, depth=3, name="fixed+length@3")
    run = pipeline.run(_subset(), _subset().queries, top_k=5)
    # Head a(1), b(5), c("T\n\nxxx" = 6 chars) reranked by length -> c, b, a; tail d, e after, in order.
    assert [doc for doc, _ in ranked(run["q1"])] == ["c", "b", "a", "d", "e"]
    assert reranker.seen == [("query one", ["x", "xxxxx", "T\n\nxxx"])]
    assert first.calls == [5]
    assert pipeline.meaningful_depth == 3
    description = pipeline.describe()
    assert description["rerank_depth"] == 3 and description["first_stage"] == {"method": "fixed"}
    assert description["reranker"] == {"reranker": "length"}


def test_depth_larger_than_top_k_is_one_clear_error():
    pipeline = RerankedRetriever(FixedFirstStage({"q1": {}}), LengthReranker(), depth=50, name="x+length@50")
    with pytest.raises(UsageError) as info:
        pipeline.run(_subset(), _subset().queries, top_k=10)
    assert "depth 50" in info.value.one_line() and "--top-k" in info.value.one_line()


def test_reranker_page_text_prefixes_title():
    assert page_text(Page("p", "body", title="Title"), PageStyle.PLAIN) == "Title\n\nbody"
    assert page_text(Page("p", "body"), PageStyle.PLAIN) == "body"


def test_method_names_resolve():
    assert PipelineSpec.parse("bm25+cohere@20").label == "bm25+cohere@20"
    assert PipelineSpec.parse("bm25+voyage:rerank-2.5-lite").label == "bm25+voyage:rerank-2.5-lite@50"
    assert PipelineSpec.parse("mixedbread-markdown+rerank").first_stage == ("mixedbread-markdown+rerank",)
    with pytest.raises(UsageError) as info:
        PipelineSpec.parse("bm25+nosuch@10")
    assert "unknown reranker 'nosuch'" in info.value.one_line() and "cohere" in info.value.one_line()

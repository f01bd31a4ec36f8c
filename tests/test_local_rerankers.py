"""Offline rerankers: real local models, scores aligned with the input order."""

from __future__ import annotations

import numpy as np
import pytest

from evals_repro.base.registry import RERANKERS
from evals_repro.methods.pipeline import PipelineSpec
from evals_repro.retrieval.base import MethodContext


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    ctx = MethodContext(benchmark="t", cache_dir=tmp_path_factory.mktemp("cache"))
    return RERANKERS.require("minilm").factory("minilm", None, ctx), ctx


def test_scores_follow_input_order_and_rank_the_answer_first(minilm):
    reranker, ctx = minilm
    documents = [
        "The cat sat on the mat.",
        "Heat pumps move heat from outside air into a building.",
        "Stock markets fell on Monday.",
    ]
    scores = reranker.rerank("how does a heat pump warm a house", documents)
    assert len(scores) == 3 and int(np.argmax(scores)) == 1
    # the same documents in another order get the same scores, permuted
    again = reranker.rerank("how does a heat pump warm a house", documents[::-1])
    assert again == pytest.approx(scores[::-1], abs=1e-6)
    usage = ctx.usage.as_dict()
    assert usage["minilm_requests"] == 2 and usage["embedded_items"] == 3  # documents embedded once
    assert reranker.rerank("anything", []) == []


def test_resolves_as_a_reranker_over_any_first_stage():
    method = PipelineSpec.parse("bm25+minilm@20")
    assert method.rerank is not None
    assert (method.first_stage, method.rerank.reranker, method.rerank.depth) == (("bm25",), "minilm", 20)
    assert PipelineSpec.parse("bm25+multilingual-e5-small").label == "bm25+multilingual-e5-small@50"

"""Reciprocal rank fusion: hand-computed scores, deterministic order, and `rrf:a+b` through the registry."""

from __future__ import annotations

import pytest

from evals_repro.base.data import Page, Query, Subset
from evals_repro.base.errors import UsageError
from evals_repro.base.registry import METHODS
from evals_repro.methods.pipeline import PipelineSpec
from evals_repro.retrieval.base import MethodContext
from evals_repro.retrieval.fusion import RRFRetriever, rrf_fuse


def test_rrf_scores_by_hand():
    fused = rrf_fuse([["a", "b", "c"], ["b", "d"]], k=60)
    assert [doc for doc, _ in fused] == ["b", "a", "d", "c"]
    scores = dict(fused)
    assert scores["b"] == 1 / 62 + 1 / 61
    assert scores["a"] == 1 / 61
    assert scores["d"] == 1 / 62
    assert scores["c"] == 1 / 63


def test_rrf_ties_keep_first_seen_order_and_top_cuts():
    # x and y tie (rank 1 in one list each): x is seen first because its list comes first.
    assert [d for d, _ in rrf_fuse([["x"], ["y"]])] == ["x", "y"]
    assert [d for d, _ in rrf_fuse([["y"], ["x"]])] == ["y", "x"]
    assert rrf_fuse([["a", "b", "c"]], k=0, top=2) == [("a", 1.0), ("b", 0.5)]
    # A page repeated within one ranking counts once, at its best rank.
    assert dict(rrf_fuse([["a", "a"]], k=0)) == {"a": 1.0}


class FixedRetriever:
    """A first stage returning a fixed ranking for every query (scores descending)."""

    def __init__(self, name: str, order: list[str]):
        self.name = name
        self.order = order
        self.asked_top_k: list[int] = []

    def run(self, subset, queries, top_k):
        self.asked_top_k.append(top_k)
        return {q.id: {d: float(len(self.order) - i) for i, d in enumerate(self.order[:top_k])} for q in queries}

    def describe(self):
        return {"method": self.name}


ORDERS = {"first": ["p1", "p2", "p3"], "second": ["p3", "p2", "p4"]}


def build_fixed(name, ctx):
    return FixedRetriever(name, ORDERS[name])


def _subset() -> Subset:
    pages = [Page(f"p{i}", f"page {i}") for i in range(1, 5)]
    return Subset("t", "s", "english", pages, [Query("q1", "x", "english")], {"q1": {"p2": 1}})


def test_rrf_retriever_fuses_component_runs():
    first, second = FixedRetriever("first", ORDERS["first"]), FixedRetriever("second", ORDERS["second"])
    retriever = RRFRetriever([first, second], name="rrf:first+second", depth=3)
    subset = _subset()
    run = retriever.run(subset, subset.queries, top_k=2)
    assert first.asked_top_k == [3] and second.asked_top_k == [3]
    # p2: 1/62 + 1/62; p3: 1/63 + 1/61; p1: 1/61 -- p3 and p2 lead, p1 is cut by top_k=2
    assert run == {"q1": {"p3": 1 / 63 + 1 / 61, "p2": 1 / 62 + 1 / 62}}
    assert retriever.describe()["components"] == [{"method": "first"}, {"method": "second"}]


def test_rrf_through_method_registry(registered):
    for name in ORDERS:
        registered(METHODS, name, build_fixed)
    spec = PipelineSpec.parse("rrf:first+second")
    assert spec.first_stage == ("first", "second") and spec.fused
    retriever = spec.build(MethodContext(benchmark="t"))
    assert retriever.name == "rrf:first+second"
    subset = _subset()
    run = retriever.run(subset, subset.queries, top_k=10)
    assert list(run["q1"]) == ["p3", "p2", "p1", "p4"]


def test_rrf_needs_two_methods():
    with pytest.raises(UsageError, match="at least two"):
        RRFRetriever([FixedRetriever("a", [])], name="rrf:a")


def test_pool_retriever_and_restriction():
    from evals_repro.base.errors import DataError
    from evals_repro.retrieval.pool import PoolRetriever, restrict_to_pools

    subset = _subset()
    subset.pools = {"q1": ["p3", "p1", "p4"]}
    run = PoolRetriever().run(subset, subset.queries, top_k=2)
    assert run == {"q1": {"p3": 0.0, "p1": -1.0}}
    assert restrict_to_pools({"q1": {"p1": 0.2, "p2": 0.9, "p4": 0.1}, "q9": {"p1": 1.0}}, subset.pools) == {
        "q1": {"p1": 0.2, "p4": 0.1}
    }
    subset.pools = None
    with pytest.raises(DataError, match="no candidate pools"):
        PoolRetriever().run(subset, subset.queries, top_k=2)

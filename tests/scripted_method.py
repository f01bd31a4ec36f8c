"""A method whose rankings are scripted by the test, so metric values can be computed by hand."""

from __future__ import annotations

import os
import time

SCRIPT: dict[str, list[str]] = {}
SCORES: dict[str, dict[str, float]] = {}  # query id -> exact scores (overrides SCRIPT's rank scores)
FAIL_ON_SUBSET: set[str] = set()


class ScriptedRetriever:
    name = "scripted"

    def run(self, subset, queries, top_k):
        if subset.name in FAIL_ON_SUBSET:
            raise RuntimeError(f"scripted failure on {subset.name}")
        delay = float(os.environ.get("SCRIPTED_DELAY", "0"))
        if delay:
            time.sleep(delay)
        if subset.name in os.environ.get("SCRIPTED_HOLD", "").split(","):
            time.sleep(600)  # held mid-subset until the test kills or stops the process (no race with a delay)
        run = {}
        for query in queries:
            docs = SCRIPT.get(query.id, [])[:top_k]
            run[query.id] = {doc: float(len(docs) - rank) for rank, doc in enumerate(docs)}
            if query.id in SCORES:
                run[query.id] = dict(SCORES[query.id])
        return run

    def describe(self):
        return {"scripted": True}


def build(name, ctx):
    return ScriptedRetriever()


# Reranker side: query text -> page id -> score; every call is recorded as (query, [page ids]).
RERANK_SCRIPT: dict[str, dict[str, float]] = {}
RERANK_CALLS: list[tuple[str, list[str]]] = []


class ScriptedReranker:
    """Scores pages by id; documents are page texts ending in the page id (as in tests/rcp_fixture.py)."""

    name = "scripted"
    model = "scripted-v1"
    workers = 1

    def rerank(self, query, documents):
        ids = [doc.rsplit(" ", 1)[-1] for doc in documents]
        RERANK_CALLS.append((query, ids))
        return [RERANK_SCRIPT[query][page] for page in ids]

    def describe(self):
        return {"model": self.model}


def build_reranker(name, model, ctx):
    return ScriptedReranker()


class OverlapReranker:
    """A fast offline reranker for protocol tests: the number of words a document shares with the query."""

    name = "overlap"
    model = "word-overlap"
    workers = 1

    def __init__(self, ctx=None):
        self.ctx = ctx

    def rerank(self, query, documents):
        words = set(query.lower().split())
        return [float(len(words & set(doc.lower().split()))) for doc in documents]

    def describe(self):
        return {"model": self.model, "kind": "word overlap (tests only)"}


def build_overlap(name, model, ctx):
    return OverlapReranker(ctx)

"""Components that break their protocol, for the contract and exit-code tests of tests/test_plugins.py.

One installed package serves every case: what each returns is chosen by the environment variable
EVALS_REPRO_DEMO_BREAK, `key=mode[,key=mode...]`: the retriever's key is the subset's name (`*`: every subset),
the reranker's `rerank`, the embedder's `zero` (a word); what it does not name gets a correct answer.
"""

import os

import numpy as np

from .embedders import HashEmbedder
from .rerankers import LengthReranker
from .retrievers import OracleRetriever


def mode(subset):
    modes = dict(part.split("=", 1) for part in os.environ.get("EVALS_REPRO_DEMO_BREAK", "").split(",") if part)
    return modes.get(subset, modes.get("*", ""))


class BreakingRetriever(OracleRetriever):
    """The oracle, broken on the subsets EVALS_REPRO_DEMO_BREAK names."""

    name = "demo-breaks"

    def run(self, subset, queries, top_k):
        run = super().run(subset, queries, top_k)
        broken = mode(subset.name)
        first = queries[0].id
        if broken == "list":
            return [[qid, pages] for qid, pages in run.items()]
        if broken == "inf":
            return {**run, first: {page: float("inf") for page in run[first]}}
        if broken == "unknown-page":
            return {**run, first: {**run[first], "not-a-page": 0.5}}
        if broken == "too-many":
            return {**run, first: {page.id: 1.0 for page in subset.pages[: top_k + 1]}}
        if broken == "unasked":
            return {**run, "not-asked": {subset.pages[0].id: 1.0}}
        if broken == "float32-empty":  # numpy scores, and nothing for the first two queries
            return {qid: {page: np.float32(score) for page, score in pages.items()} for qid, pages in run.items()} | {
                query.id: {} for query in queries[:2]
            }
        return run


class BreakingReranker(LengthReranker):
    """The length reranker, broken as EVALS_REPRO_DEMO_BREAK's `rerank=<mode>` says."""

    name = "demo-misranks"

    def rerank(self, query, documents):
        scores = super().rerank(query, documents)
        broken = mode("rerank")
        if broken == "nan":
            return [float("nan")] + scores[1:]
        if broken == "short":
            return scores[:-1]
        if broken == "array":
            return np.asarray(scores, dtype=np.float32)
        return scores


class ZeroEmbedder(HashEmbedder):
    """The hashed bag of words, all zeros for texts that mention EVALS_REPRO_DEMO_BREAK's word `zero=<word>`."""

    name = "demo-zeros"

    def embed(self, items, input_type):
        rows = super().embed(items, input_type)
        word = mode("zero")
        for i, item in enumerate(items):
            if word and word in (item.text or "").lower():
                rows[i] = 0.0
        return rows

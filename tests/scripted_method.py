"""A method whose rankings are scripted by the test, so metric values can be computed by hand."""

from __future__ import annotations

import os
import time

SCRIPT: dict[str, list[str]] = {}
FAIL_ON_SUBSET: set[str] = set()


class ScriptedRetriever:
    name = "scripted"

    def run(self, subset, queries, top_k):
        if subset.name in FAIL_ON_SUBSET:
            raise RuntimeError(f"scripted failure on {subset.name}")
        delay = float(os.environ.get("SCRIPTED_DELAY", "0"))
        if delay:
            time.sleep(delay)
        run = {}
        for query in queries:
            docs = SCRIPT.get(query.id, [])[:top_k]
            run[query.id] = {doc: float(len(docs) - rank) for rank, doc in enumerate(docs)}
        return run

    def describe(self):
        return {"scripted": True}


def build(name, ctx):
    return ScriptedRetriever()

"""A loader for the `evals_repro.benchmarks` group: the subset is built in code."""

from evals_repro import Page, Query, Subset


def load(decl, name, options):
    pages = [Page(f"{name}-p{i}", f"page {i} of {name}") for i in range(1, 5)]
    queries = [Query(f"{name}-q1", "which page is first", "english"), Query(f"{name}-q2", "second", "english")]
    qrels = {f"{name}-q1": {f"{name}-p1": 1}, f"{name}-q2": {f"{name}-p2": 2, f"{name}-p3": 1}}
    return Subset(decl.name, name, "english", pages, queries, qrels, source={"loader": "demo-layout"})

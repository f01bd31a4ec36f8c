"""First stages for the `evals_repro.retrievers` group."""


class OracleRetriever:
    """Each query's relevant pages, best grade first (nDCG@10 = 1 by construction)."""

    name = "demo-oracle"

    def run(self, subset, queries, top_k):
        run = {}
        for query in queries:
            judged = subset.qrels.get(query.id, {})
            ranked = sorted((doc for doc, grade in judged.items() if grade > 0), key=lambda d: (-judged[d], d))
            run[query.id] = {doc: float(judged[doc]) for doc in ranked[:top_k]}
        return run

    def describe(self):
        return {"oracle": "qrels, best grade first"}


class RaisingRetriever(OracleRetriever):
    """The oracle, except on railway-maintenance, where it raises."""

    name = "demo-raises"

    def run(self, subset, queries, top_k):
        if subset.name == "railway-maintenance":
            raise RuntimeError("demo retriever cannot read railway-maintenance")
        return super().run(subset, queries, top_k)


class NoDescribe:
    """Lacks describe()."""

    name = "demo-incomplete"

    def run(self, subset, queries, top_k):
        return {}


class Twin(OracleRetriever):
    """The demo plugin's `demo-twin` (the twin plugin claims the name too)."""

    name = "demo-twin"


class Unstartable(OracleRetriever):
    """Cannot be built here."""

    name = "demo-unstartable"

    def __init__(self):
        raise RuntimeError("no GPU here")

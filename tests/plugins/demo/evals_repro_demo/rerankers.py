"""A reranker for the `evals_repro.rerankers` group: shorter pages first."""


class LengthReranker:
    """Shorter pages first (score = -characters)."""

    name = "demo-length"
    model = "length"

    def rerank(self, query, documents):
        return [-float(len(document)) for document in documents]

    def describe(self):
        return {"model": self.model}

"""First-stage retrieval: the Retriever protocol, BM25, the exact cosine index."""

"""First-stage retrieval: the Retriever protocol, BM25, dense retrieval over the exact cosine index, RRF
fusion, and the judged candidate pools of pooled views."""

"""First-stage retrieval: the Retriever protocol, BM25, dense retrieval over the exact cosine index, RRF
fusion, and the judged candidate pools of pooled views.

Layer: components. May import base, the sources (metrics, providers, benchmarks) and the other components; never
methods, records, the runner, reports or the CLI.
"""

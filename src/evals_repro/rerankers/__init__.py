"""Rerankers over any first stage: hosted (Cohere, Voyage, Mixedbread through their official SDKs), local on
vLLM (qwen3-8b, zerank-2: `serve-reranker` starts the replicas), and offline bi-encoders (minilm, multilingual-e5-small).

Layer: components. May import base, the sources (metrics, providers, benchmarks) and the other components; never
methods, records, the runner, reports or the CLI.
"""

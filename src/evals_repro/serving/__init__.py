"""Local models served on vLLM: `serve-reranker` (qwen3-8b, zerank-2) and `serve-embedder`.

Owns the replica launcher and the `vllm serve` command lines (`reranker`, shared by `embedder`), one replica
per GPU, and who reaches the replicas (`access`: the address, the URL clients are given, the key); the clients
that call these servers live with their components (rerankers/vllm.py, embedders/openai_compat.py).

Layer: products. May import every layer up to the runner.
"""

"""The reranking study: frozen candidates, resumable quality runs, serial latency, the study report.

Layout of a study directory (default `results/rerank-study`):
- `manifest.json`: protocol, dataset digests and revisions, selected queries, models, versions, host, sessions;
- `study.lock`: held by the one process writing the directory;
- `candidates/<benchmark>/<subset>.jsonl`: frozen first-stage top-100 per query;
- `quality.jsonl`: one record per (model, query) rerank request, flushed per record;
- `latency-plan.json`, `latency.jsonl`, `warmup.jsonl`: the sampled queries and every timed call;
- `report.md`, `quality.csv`, `latency-summary.json`: written by `rerank-study report`.

Layer: products. May import every layer up to the runner; never the CLI.
"""

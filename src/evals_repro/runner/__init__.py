"""The run loop: a request over a benchmark's subsets, each scored, recorded, resumable.

Owns the request and its outcomes (`run_request`), the loop (`evaluation`), what `--resume` may keep
(`resume`), first-stage pools of pooled views (`pooling`), scoring a run against a subset (`scoring`) and the
record of one subset (`subset_result`).

Layer: runner. May import everything below it (base, sources, components, methods, records); never the
reports, the study, the paper's evaluation or the CLI.
"""

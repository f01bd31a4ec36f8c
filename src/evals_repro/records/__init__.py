"""What a run leaves on disk: the typed result record and the saved TREC run beside it.

Owns the result record (`results`: its schema version, reading, writing, coverage), where a result unit lives and
what `--resume` decides about it (`units`: paths, settings, verdicts; no pydantic, so refusals import only it) and
the saved runs and judgments (`runs`: `<subset>.run.gz`, `.qrels.gz`, `.gains.gz`).

Layer: methods. May import base and the sources (metrics, providers, benchmarks); read by the runner, the
reports, the study and the CLI.
"""

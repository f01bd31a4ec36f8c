"""Hand-made result records for report tests: every required field filled, the scores given by the test."""

from __future__ import annotations

from pathlib import Path

from evals_repro.records.results import DataDigest, MethodConfig, QueryEntry, ResultRecord, SavedRun

DIGEST = "0" * 64


def write_record(
    path: Path,
    *,
    benchmark: str,
    subset: str,
    method: str,
    languages: dict[str, dict[str, float]],
    native_language: str,
    setting: str = "monolingual",
    metrics: dict[str, float] | None = None,
    first_stage: str | None = None,
    reranked: bool = False,
    tie_rule: str = "group-mean",
    per_query: dict[str, dict[str, float]] | None = None,
) -> ResultRecord:
    """A complete record with the given per-language means (aggregate: their mean unless given); `per_query`:
    query id -> its metrics, each query in the native language."""
    names = sorted({m for block in languages.values() for m in block})
    aggregate = metrics or {m: sum(b[m] for b in languages.values()) / len(languages) for m in names}
    record = ResultRecord(
        benchmark=benchmark,
        subset=subset,
        method=method,
        first_stage=first_stage or method,
        reranked=reranked,
        setting=setting,
        native_language=native_language,
        config=MethodConfig(method=method, pipeline={"first_stage": [method]}, content="markdown", top_k=100),
        protocol={"measures": names, "tie_rule": tie_rule, "score_precision": "float32"},
        data=DataDigest(corpus=DIGEST, queries=DIGEST, qrels=DIGEST, combined=DIGEST),
        metrics=aggregate,
        languages={lang: {"n_queries": 1, "metrics": block} for lang, block in languages.items()},
        per_query={
            qid: QueryEntry(language=native_language, metrics=values) for qid, values in (per_query or {}).items()
        },
        n_queries=len(per_query) if per_query else len(languages),
        run=SavedRun(
            path=f"{subset}.run.gz",
            sha256=DIGEST,
            qrels_path=f"{subset}.qrels.gz",
            qrels_sha256=DIGEST,
            n_queries=0,
            n_lines=0,
        ),
        created="2026-12-01T00:00:00+00:00",
    )
    record.save(path)
    return record


def write_rcp_grid(root: Path, decl, method: str = "m") -> dict[tuple[str, str], float]:
    """Results for all 48 vidore-v3-rcp subsets under `root`: score = domain index / 10 + language index / 100."""
    scores = {}
    for d, domain in enumerate(decl.extra["native"]):
        for i, lang in enumerate(decl.query_languages):
            scores[domain, lang] = d / 10 + i / 100
            write_record(
                root / "vidore-v3-rcp" / method / f"{domain}__{lang}.json",
                benchmark="vidore-v3-rcp",
                subset=f"{domain}__{lang}",
                method=method,
                native_language=lang,
                languages={lang: {"ndcg_at_10": scores[domain, lang]}},
            )
    return scores

"""A synthetic rcp-ndcg release at the card's scale, for the replay benchmark (test_rcp_replay_perf.py).

8 domains x 6 languages; per subset `queries` queries, each with a judged pool of `pool` pages (gains, grades,
thetas) out of its domain's pages; `provenance/runs/{domain}.parquet` holds every model's score of every pool page
of every query of the domain's six subsets (plus one judge row a query, dropped by the replay), ids as plain
strings as the release stores them, scores rounded to 1e-3 so ties occur. The full size is the card's: 14 models,
302 queries a subset (14,496 queries; the card has 14,514), 150 pool pages: 2,174,400 pool pairs a model, 30.4M run
rows. Files follow the conventional paths (no card): `{subset}/{qrels,top_ranked,queries}.parquet`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from evals_repro.benchmarks.rcp_release import DOMAINS, LANGUAGES

MODELS = 14
PAGES_PER_DOMAIN = 3000


def _strings(prefix: str, codes: np.ndarray, n: int) -> pa.Array:
    """Plain string ids `{prefix}{code}` built in Arrow (a dictionary cast), not one Python str at a time."""
    dictionary = pa.array([f"{prefix}{i}" for i in range(n)], pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), dictionary).cast(pa.string())


def write_release(folder: Path, queries: int, pool: int = 150, models: int = MODELS, seed: int = 7) -> int:
    """Write the release; the number of (model, pool page) run rows the replay scores."""
    rng = np.random.default_rng(seed)
    model_names = [f"model-{m:02d}" for m in range(models)]
    rows = 0
    for domain in DOMAINS:
        domain_queries = queries * len(LANGUAGES)
        pools = np.stack([rng.choice(PAGES_PER_DOMAIN, pool, replace=False) for _ in range(domain_queries)])
        page_prefix, query_prefix = f"{domain}-p", f"{domain}-q"
        for k, language in enumerate(LANGUAGES):
            subset = folder / f"{domain}__{language}"
            subset.mkdir(parents=True, exist_ok=True)
            ids = np.arange(k * queries, (k + 1) * queries)
            qids = _strings(query_prefix, ids, domain_queries)
            pq.write_table(pa.table({"id": qids, "text": pa.array(["q"] * queries)}), subset / "queries.parquet")
            pool_ids = [[f"{page_prefix}{p}" for p in pools[i]] for i in ids]
            pq.write_table(pa.table({"query-id": qids, "corpus-ids": pool_ids}), subset / "top_ranked.parquet")
            flat = pools[ids].ravel()
            pq.write_table(
                pa.table(
                    {
                        "query-id": _strings(query_prefix, np.repeat(ids, pool), domain_queries),
                        "corpus-id": _strings(page_prefix, flat, PAGES_PER_DOMAIN),
                        "score": pa.array(rng.integers(0, 3, flat.size), pa.int64()),
                        "gain": pa.array(rng.random(flat.size)),
                        "theta": pa.array(rng.normal(size=flat.size)),
                    }
                ),
                subset / "qrels.parquet",
            )
        n = models * domain_queries * pool
        model_codes = np.repeat(np.arange(models), domain_queries * pool)
        query_codes = np.tile(np.repeat(np.arange(domain_queries), pool), models)
        page_codes = np.tile(pools.ravel(), models)
        judge = np.arange(domain_queries)
        runs = pa.table(
            {
                "model": pa.DictionaryArray.from_arrays(
                    pa.array(np.concatenate([model_codes, np.full(domain_queries, models)]), pa.int32()),
                    pa.array([*model_names, "judge"]),
                ).cast(pa.string()),
                "is_judge": pa.array(np.concatenate([np.zeros(n, bool), np.ones(domain_queries, bool)])),
                "query-id": _strings(query_prefix, np.concatenate([query_codes, judge]), domain_queries),
                "corpus-id": _strings(page_prefix, np.concatenate([page_codes, pools[:, 0]]), PAGES_PER_DOMAIN),
                "score": pa.array(np.round(rng.random(n + domain_queries), 3)),
            }
        )
        (folder / "provenance" / "runs").mkdir(parents=True, exist_ok=True)
        pq.write_table(runs, folder / "provenance" / "runs" / f"{domain}.parquet", row_group_size=1 << 20)
        rows += n
        print(f"  wrote {domain}: {n:,} run rows", file=sys.stderr, flush=True)
    return rows

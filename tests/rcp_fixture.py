"""A tiny rcp-ndcg-vidore-v3 release in the release's layout, written for the tests.

The layout is the card's (see src/evals_repro/benchmarks/rcp_release.py): README.md declares, per subset
`{domain}__{language}`, the configs `-corpus` (one corpus per domain, shared by its languages, in
push_to_hub shards `{domain}/corpus/test-0000k-of-0000n.parquet`), `-queries`, `-qrels` and
`-top_ranked` (`{subset}/{part}.parquet`), and the provenance configs split by domain
(`provenance/{runs,first_stage,pool}/{domain}.parquet`); `provenance/releases.json` maps the release
tags to their commits, `provenance/item_params.qwen35.json` holds the gain link.

Replay data (hand-checked in test_rcp.py): domains hr (native english) and energy (native
french), languages english and french, one query each, a 3-page pool, two rerankers, a judge row
(dropped), a NaN score (dropped) and a score outside the pool (ignored in the reranking view).
Pool data: hr__german (RRF reproduces rrf_fused; one missed positive is injected, as provenance-pool
says) and energy__german (rrf_fused off by 1e-9 on one page: must be reported).
"""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

NAN = float("nan")
# The release tags and their commits, as the release's provenance/releases.json lists them.
V1 = "b22323345cb5639944600d490969bcce9fba7943"
V2 = "4e5ca46e2f9c050b18a7f170c23e3ade66f78a4e"
TAGS = {"v1-nvidia-qwen3.5-397b-a17b-nvfp4": V1, "v2-nvidia-qwen3.5-397b-a17b-nvfp4": V2}

# subset -> (query id, query text, pool, [(page, score, gain, theta)])
QRELS = {
    "hr__english": (
        "hr-en-1",
        "What is the leave policy?",
        ["h1", "h2", "h3"],
        [("h1", 2, 0.9, 1.5), ("h2", 0, 0.5, 0.2), ("h3", 0, 0.1, -1.0), ("h4", 1, 0.0, None)],
    ),
    "hr__french": (
        "hr-fr-1",
        "Quelle est la politique de congé ?",
        ["h1", "h2", "h3"],
        [("h1", 0, 0.3, 0.1), ("h2", 2, 0.6, 0.9), ("h3", 0, 0.3, 0.1)],
    ),
    "energy__english": (
        "en-en-1",
        "Which plant produced most?",
        ["e1", "e2", "e3"],
        [("e1", 1, 0.7, 1.0), ("e2", 0, 0.2, -0.3), ("e3", 0, 0.05, -2.0)],
    ),
    "energy__french": (
        "en-fr-1",
        "Quelle centrale a le plus produit ?",
        ["e1", "e2", "e3"],
        [("e1", 0, 0.1, -1.5), ("e2", 2, 0.8, 1.2), ("e3", 0, 0.4, 0.0)],
    ),
}
# domain -> [(model, is_judge, query, page, score)]
RUNS = {
    "hr": [
        ("rerank-2.5", False, "hr-en-1", "h1", 0.9),
        ("rerank-2.5", False, "hr-en-1", "h2", 0.5),
        ("rerank-2.5", False, "hr-en-1", "h3", 0.5),
        ("rerank-2.5", False, "hr-en-1", "h4", 0.99),
        ("zerank-2", False, "hr-en-1", "h1", 0.2),
        ("zerank-2", False, "hr-en-1", "h2", 0.8),
        ("zerank-2", False, "hr-en-1", "h3", 0.2),
        ("rerank-2.5", False, "hr-fr-1", "h1", 0.1),
        ("rerank-2.5", False, "hr-fr-1", "h2", 0.9),
        ("rerank-2.5", False, "hr-fr-1", "h3", 0.3),
        ("zerank-2", False, "hr-fr-1", "h1", 0.5),
        ("zerank-2", False, "hr-fr-1", "h2", 0.5),
        ("zerank-2", False, "hr-fr-1", "h3", 0.5),
        ("qwen35-judge", True, "hr-en-1", "h3", 9.0),
    ],
    "energy": [
        ("rerank-2.5", False, "en-en-1", "e1", 0.7),
        ("rerank-2.5", False, "en-en-1", "e2", 0.6),
        ("rerank-2.5", False, "en-en-1", "e3", 0.5),
        ("zerank-2", False, "en-en-1", "e1", 0.1),
        ("zerank-2", False, "en-en-1", "e2", 0.6),
        ("zerank-2", False, "en-en-1", "e3", 0.5),
        ("rerank-2.5", False, "en-fr-1", "e1", 0.3),
        ("rerank-2.5", False, "en-fr-1", "e2", 0.3),
        ("rerank-2.5", False, "en-fr-1", "e3", 0.9),
        ("zerank-2", False, "en-fr-1", "e1", 0.9),
        ("zerank-2", False, "en-fr-1", "e2", NAN),
        ("zerank-2", False, "en-fr-1", "e3", 0.2),
    ],
}
ITEM_PARAMS = {
    "judge": "nvidia/Qwen3.5-397B-A17B-NVFP4",
    "items": [{"name": "C1", "gamma": 1.0, "beta": 0.0}, {"name": "C2", "gamma": 2.0, "beta": 1.0}],
}
PAGES = {"hr": ["h1", "h2", "h3", "h4"], "energy": ["e1", "e2", "e3"]}
POOL_SUBSETS = {"hr__german": "hr-de-1", "energy__german": "en-de-1"}


def _parquet(columns: dict[str, list], schema: pa.Schema | None = None) -> bytes:
    table = pa.table(columns, schema=schema)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def oracle_rrf(rankings: list[list[str]], k: int = 60) -> list[tuple[str, float]]:
    """Independent RRF for building rrf_fused: sum 1/(k+rank) list by list, stable sort."""
    total: dict[str, float] = {}
    for ranking in rankings:
        for position, doc in enumerate(ranking):
            total[doc] = total.get(doc, 0.0) + 1.0 / (k + position + 1)
    return sorted(total.items(), key=lambda item: -item[1])


def _first_stage(qid: str, positive: str, perturb: bool) -> tuple[dict[str, list], list[str]]:
    others = [f"x{i:03d}" for i in range(200)]
    rng = random.Random(qid)
    embed = [positive] + others[:159]
    bm25 = [positive] + list(reversed(others))[:159]
    octen = [positive] + rng.sample(others, 159)
    fused = oracle_rrf([embed, bm25, octen])[:150]
    rows = {"query-id": [], "retriever": [], "corpus-id": [], "rank": [], "score": []}
    for name, ranking in (
        ("embed_v4", [(d, 1.0 - i / 1000) for i, d in enumerate(embed)]),
        ("bm25", [(d, 30.0 - i / 10) for i, d in enumerate(bm25)]),
        ("octen", [(d, 0.9 - i / 1000) for i, d in enumerate(octen)]),
        ("rrf_fused", fused),
    ):
        for rank, (doc, score) in enumerate(ranking, start=1):
            if perturb and name == "rrf_fused" and rank == 7:
                score += 1e-9
            for key, value in zip(rows, (qid, name, doc, rank, score)):
                rows[key].append(value)
    pool = [d for d, _ in fused]
    pool[-1] = "missed-positive"  # the lowest-ranked page is not relevant: the missed positive replaces it
    return rows, pool


def qrels_parquet(qid: str, rows: list[tuple]) -> bytes:
    """`{subset}-qrels`: query-id, corpus-id, score (int), gain, theta (null outside the judged pool)."""
    return _parquet(
        {
            "query-id": [qid] * len(rows),
            "corpus-id": [r[0] for r in rows],
            "score": [r[1] for r in rows],
            "gain": [r[2] for r in rows],
            "theta": [r[3] for r in rows],
        },
        pa.schema(
            [
                ("query-id", pa.string()),
                ("corpus-id", pa.string()),
                ("score", pa.int64()),
                ("gain", pa.float64()),
                ("theta", pa.float64()),
            ]
        ),
    )


def releases_json(tags: dict[str, str]) -> bytes:
    return json.dumps(
        {
            "releases": [
                {"tag": tag, "commit": sha, "judge": "nvidia/Qwen3.5-397B-A17B-NVFP4"} for tag, sha in tags.items()
            ]
        },
        indent=1,
    ).encode()


def release_files() -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    for domain, pages in PAGES.items():
        files[f"{domain}/corpus/test-00000-of-00001.parquet"] = _parquet(
            {
                "id": pages,
                "image": [{"bytes": f"PNG-{p}".encode(), "path": f"{p}.png"} for p in pages],
                "text": [f"OCR text of page {p}" for p in pages],
            },
            pa.schema([("id", pa.string()), ("image", image_type), ("text", pa.string())]),
        )
    for subset, (qid, text, pool, rows) in QRELS.items():
        files[f"{subset}/queries.parquet"] = _parquet({"id": [qid], "text": [text]})
        files[f"{subset}/top_ranked.parquet"] = _parquet({"query-id": [qid], "corpus-ids": [pool]})
        files[f"{subset}/qrels.parquet"] = qrels_parquet(qid, rows)
    for subset, qid in POOL_SUBSETS.items():
        domain = subset.split("__")[0]
        first_stage, pool = _first_stage(qid, "g1", perturb=subset.startswith("energy"))
        # Provenance is split by domain: this domain's file holds its queries of every language (here
        # also one of another subset, which a check of this subset must leave out).
        other, _ = _first_stage(f"{domain}-it-9", "g1", perturb=True)
        files[f"provenance/first_stage/{domain}.parquet"] = _parquet(
            {key: first_stage[key] + other[key] for key in first_stage}
        )
        files[f"provenance/pool/{domain}.parquet"] = _parquet(
            {"query-id": [qid] * len(pool), "corpus-id": pool, "gt_injected": [d == "missed-positive" for d in pool]}
        )
        files[f"{subset}/queries.parquet"] = _parquet({"id": [qid], "text": ["Wie viele Urlaubstage?"]})
        files[f"{subset}/top_ranked.parquet"] = _parquet({"query-id": [qid], "corpus-ids": [pool]})
        files[f"{subset}/qrels.parquet"] = qrels_parquet(qid, [("g1", 2, 0.9, 1.2), ("missed-positive", 1, 0.0, None)])
    for domain, rows in RUNS.items():
        files[f"provenance/runs/{domain}.parquet"] = _parquet(
            {
                "model": [r[0] for r in rows],
                "is_judge": [r[1] for r in rows],
                "query-id": [r[2] for r in rows],
                "corpus-id": [r[3] for r in rows],
                "score": [r[4] for r in rows],
            }
        )
    files["provenance/item_params.qwen35.json"] = json.dumps(ITEM_PARAMS).encode()
    files["provenance/releases.json"] = releases_json(TAGS)
    return with_card(files)


def with_card(files: dict[str, bytes]) -> dict[str, bytes]:
    """(Re)write README.md: the card's `configs` for every subset folder and provenance file present."""
    subsets = sorted({m.group(1) for f in files if (m := re.fullmatch(r"(\w+__\w+)/queries\.parquet", f))})
    lines = ["---", "license: cc-by-4.0", "configs:"]

    def config(name: str, entries: list[tuple[str, str]]) -> None:
        lines.extend([f"- config_name: {name}", "  data_files:"])
        for split, path in entries:
            lines.extend([f"  - split: {split}", f"    path: {path}"])

    for subset in subsets:
        domain = subset.split("__")[0]
        config(f"{subset}-corpus", [("test", f"{domain}/corpus/test-*")])
        for part in ("queries", "qrels", "top_ranked"):
            if f"{subset}/{part}.parquet" in files:
                config(f"{subset}-{part}", [("test", f"{subset}/{part}.parquet")])
    for name, folder in (("runs", "runs"), ("first-stage", "first_stage"), ("pool", "pool")):
        domains = sorted(m.group(1) for f in files if (m := re.fullmatch(rf"provenance/{folder}/(\w+)\.parquet", f)))
        if domains:
            config(f"provenance-{name}", [(d, f"provenance/{folder}/{d}.parquet") for d in domains])
    lines += ["---", "# fixture of fabianschmidt-cohere/rcp-ndcg-vidore-v3", ""]
    files["README.md"] = "\n".join(lines).encode()
    return files


def write_snapshot(folder: Path) -> Path:
    for relpath, data in release_files().items():
        path = folder / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder

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
import math
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


QRELS_SCHEMA = pa.schema(
    [
        ("query-id", pa.string()),
        ("corpus-id", pa.string()),
        ("score", pa.int64()),
        ("gain", pa.float64()),
        ("theta", pa.float64()),
    ]
)


def qrels_table(rows: list[tuple]) -> bytes:
    """`{subset}-qrels` from (query id, corpus id, score (int), gain, theta (None outside the judged pool)) rows."""
    return _parquet({name: [r[i] for r in rows] for i, name in enumerate(QRELS_SCHEMA.names)}, QRELS_SCHEMA)


def qrels_parquet(qid: str, rows: list[tuple]) -> bytes:
    """`{subset}-qrels` of one query, from (corpus id, score, gain, theta) rows."""
    return qrels_table([(qid, *row) for row in rows])


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


# -- the card's full layout: 8 domains x 6 languages, 14 rerankers, with hand-known table cells -----------------
#
# Every subset has one query ("alpha beta") and the pool [a, b, c] of its domain (texts "alpha beta", "alpha gamma",
# "delta epsilon": a hosted fake reranks them a, b, c). Gains (0.9, 0.5, 0.1) and grades (2, 1, 0), except in the
# two subsets of PERTURBED, whose gains (1, g, 0) and grades (1, 1, 0) make CTXL-RR-1B's swapped order (b, a, c)
# score exactly the target there: 99.94 and 99.96 against a printed 100.0. Each model ranks each subset by one
# PATTERN (scores of a, b, c), chosen by (model, domain, language) index; T ties a and b.
CARD_DOMAINS = (
    "computer_science",
    "energy",
    "finance_en",
    "finance_fr",
    "hr",
    "industrial",
    "pharmaceuticals",
    "physics",
)
CARD_LANGUAGES = ("english", "french", "german", "italian", "portuguese", "spanish")
CARD_MODELS = {  # provenance-runs model -> the card's name, in the card's row order
    "ctxl-rerank-v2-instruct-multilingual-1b": "CTXL-RR-1B",
    "ctxl-rerank-v2-instruct-multilingual-2b": "CTXL-RR-2B",
    "ctxl-rerank-v2-instruct-multilingual-6b": "CTXL-RR-6B",
    "jina-reranker-v3": "Jina-RR-v3",
    "Qwen3-Reranker-0.6B": "Qwen3-RR-0.6B",
    "Qwen3-Reranker-4B": "Qwen3-RR-4B",
    "Qwen3-Reranker-8B": "Qwen3-RR-8B",
    "rerank-v4.0-fast": "RR4-Fast",
    "rerank-v4.0-pro": "RR4-Pro",
    "rerank-2.5-lite": "Voyage2.5-lt",
    "rerank-2.5": "Voyage2.5",
    "zerank-1-small": "zerank-1-sm",
    "zerank-1": "zerank-1",
    "zerank-2": "zerank-2",
}
PATTERNS = {"P": (3.0, 2.0, 1.0), "R": (1.0, 2.0, 3.0), "T": (2.0, 2.0, 1.0), "S": (2.0, 3.0, 1.0)}
PERTURBED = {"hr__english": 0.9994, "computer_science__english": 0.9996}  # CTXL-RR-1B's swapped order scores this
PAGE_TEXTS = {"a": "alpha beta", "b": "alpha gamma", "c": "delta epsilon"}
QUERY_TEXT = "alpha beta"
# Extra pages: byte-identical OCR (a page with the same text as the pool's `a`, graded 2 while it is not: different
# qrels; two unjudged twins: not) and empty OCR (industrial 2, hr 1), none pooled or judged.
EXTRA_PAGES = {
    "pharmaceuticals": [
        ("pharmaceuticals-a2", "alpha beta"),
        ("pharmaceuticals-y1", "twin"),
        ("pharmaceuticals-y2", "twin"),
    ],
    "physics": [("physics-a2", "alpha beta")],
    "industrial": [("industrial-e1", ""), ("industrial-e2", "  \n")],
    "hr": [("hr-e1", None)],
}
INJECTED = {("hr", "english"), ("energy", "french")}  # provenance-pool marks c injected for these queries
CRITERIA_ROWS = 10  # rows of provenance-judge-criteria per domain


def card_query(domain: str, language: str) -> str:
    return f"{domain}-{language}-1"


def swap_gain(target: float) -> float:
    """The gain g of b with a at 1 and c at 0 that makes the order (b, a, c) score `target`:
    (g + 1/log2 3) / (1 + g/log2 3) = target."""
    inv = 1 / math.log2(3)
    return (target - inv) / (1 - target * inv)


def card_judgments(domain: str, language: str) -> list[tuple[str, int, float, float | None]]:
    """(page, grade, gain, theta) of the subset's query."""
    a, b, c = (f"{domain}-{p}" for p in "abc")
    subset = f"{domain}__{language}"
    if subset in PERTURBED:
        return [(a, 1, 1.0, 2.0), (b, 1, swap_gain(PERTURBED[subset]), 1.9), (c, 0, 0.0, -3.0)]
    return [(a, 2, 0.9, 1.0), (b, 1, 0.5, 0.0), (c, 0, 0.1, -1.0)]


def card_pattern(model_index: int, domain: str, language: str) -> str:
    subset = f"{domain}__{language}"
    if model_index == 0 and subset in PERTURBED:
        return "S"
    return "PRT"[(model_index + CARD_DOMAINS.index(domain) + CARD_LANGUAGES.index(language)) % 3]


def card_release_files() -> dict[str, bytes]:
    """The fixture release in the card's layout (`write_card_snapshot` writes it to a folder)."""
    files: dict[str, bytes] = {}
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    for domain in CARD_DOMAINS:
        pages = [(f"{domain}-{p}", text) for p, text in PAGE_TEXTS.items()] + EXTRA_PAGES.get(domain, [])
        files[f"{domain}/corpus/test-00000-of-00001.parquet"] = _parquet(
            {
                "id": [p for p, _ in pages],
                "image": [{"bytes": f"PNG-{p}".encode(), "path": f"{p}.png"} for p, _ in pages],
                "text": [t for _, t in pages],
            },
            pa.schema([("id", pa.string()), ("image", image_type), ("text", pa.string())]),
        )
        runs: dict[str, list] = {"model": [], "is_judge": [], "query-id": [], "corpus-id": [], "score": []}
        stages: dict[str, list] = {"query-id": [], "retriever": [], "corpus-id": [], "rank": [], "score": []}
        pool_rows: dict[str, list] = {"query-id": [], "corpus-id": [], "gt_injected": []}
        pool = [f"{domain}-{p}" for p in "abc"]
        for language in CARD_LANGUAGES:
            subset, qid = f"{domain}__{language}", card_query(domain, language)
            files[f"{subset}/queries.parquet"] = _parquet({"id": [qid], "text": [QUERY_TEXT]})
            files[f"{subset}/top_ranked.parquet"] = _parquet({"query-id": [qid], "corpus-ids": [pool]})
            files[f"{subset}/qrels.parquet"] = qrels_parquet(qid, card_judgments(domain, language))
            for index, model in enumerate(CARD_MODELS):
                scores = PATTERNS[card_pattern(index, domain, language)]
                for page, score in zip(pool, scores):
                    for key, value in zip(runs, (model, False, qid, page, score)):
                        runs[key].append(value)
            for key, value in zip(runs, ("qwen35-judge", True, qid, pool[2], 9.0)):  # a judge row: dropped
                runs[key].append(value)
            rankings = {"embed_v4": pool, "bm25": [pool[1], pool[0], pool[2]], "octen": [pool[0], pool[2], pool[1]]}
            fused = oracle_rrf(list(rankings.values()))
            for name, ranking in [
                *((n, [(d, 1.0 - i / 10) for i, d in enumerate(r)]) for n, r in rankings.items()),
                ("rrf_fused", fused),
            ]:
                for rank, (doc, score) in enumerate(ranking, start=1):
                    for key, value in zip(stages, (qid, name, doc, rank, score)):
                        stages[key].append(value)
            for page in pool:
                pool_rows["query-id"].append(qid)
                pool_rows["corpus-id"].append(page)
                pool_rows["gt_injected"].append((domain, language) in INJECTED and page == pool[2])
        files[f"provenance/runs/{domain}.parquet"] = _parquet(runs)
        files[f"provenance/first_stage/{domain}.parquet"] = _parquet(stages)
        files[f"provenance/pool/{domain}.parquet"] = _parquet(pool_rows)
        files[f"provenance/judge_criteria/{domain}.parquet"] = _parquet(
            {"query-id": [card_query(domain, "english")] * CRITERIA_ROWS, "criterion": list(range(CRITERIA_ROWS))}
        )
    files["provenance/item_params.qwen35.json"] = json.dumps(ITEM_PARAMS).encode()
    files["provenance/releases.json"] = releases_json(TAGS)
    files = with_card(files)
    criteria = "\n".join(
        ["- config_name: provenance-judge-criteria", "  data_files:"]
        + [f"  - split: {d}\n    path: provenance/judge_criteria/{d}.parquet" for d in CARD_DOMAINS]
    )
    card = files["README.md"].decode().replace("\n---\n# fixture", f"\n{criteria}\n---\n# fixture", 1)
    files["README.md"] = card.encode()
    return files


def write_card_snapshot(folder: Path) -> Path:
    for relpath, data in card_release_files().items():
        path = folder / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder

"""Fixtures of the `text` benchmark in its upstream layouts, written for the tests (no dataset text).

- The five mteb BEIR copies, served by the fake Hub at the shas `benchmarks/text.toml` pins, in the
  layout of `mteb/fiqa`@27a1688: `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl` (`_id`,
  `text`; every split's queries), `qrels/{split}.jsonl` (`query-id`, `corpus-id`, `score` float),
  and a README whose YAML declares configs `corpus` (split corpus), `queries` (split queries) and
  `default` (the qrels splits).
- An ir_datasets cache folder for `msmarco-passage` as ir_datasets leaves it after its downloads:
  `collection.tsv` (pid TAB text), `irds_version.txt` = `v2` (else its migrator deletes the
  collection on first access), `trec-dl-2019/queries.tsv`, `trec-dl-2019/qrels` (TREC 4 columns),
  `trec-dl-2020/queries.tsv.gz` (kept gzipped there) and `trec-dl-2020/qrels`.

The scifact and DL fixtures are designed so BM25's order is decided by document length alone (the
matching documents share the same terms at tf 1), which makes the metrics computable by hand; see
tests/test_text_benchmark.py.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# subset -> (corpus rows (id, title, text), queries (id, text), {split: [(qid, docid, score)]})
BEIR: dict[str, tuple[list[tuple[str, str, str]], list[tuple[str, str]], dict[str, list[tuple[str, str, float]]]]] = {
    "scifact": (
        [
            ("101", "Vitamin D", "Vitamin D deficiency in winter."),
            ("102", "", "Deficiency of iron causes anaemia in children and adults alike."),
            ("103", "Sleep", "Sleep quality and memory consolidation."),
            ("104", "Exercise", "Exercise lowers blood pressure."),
        ],
        [
            ("1", "iron deficiency"),
            ("2", "sleep memory"),
            ("3", "blood pressure exercise"),
            ("4", "vitamin winter"),  # a train query: not in the test qrels, so not loaded
        ],
        {
            "test": [("1", "101", 1.0), ("2", "103", 1.0), ("3", "104", 1.0), ("3", "103", 1.0)],
            "train": [("4", "101", 1.0)],
        },
    ),
    "fiqa": (  # no titles, like fiqa; the queries config holds train/dev/test queries
        [
            ("31", "", "Index funds track a market index at low cost."),
            ("32", "", "A bond pays a fixed coupon until maturity."),
            ("33", "", ""),  # fiqa has empty documents
            # Same id as query 8 and its best BM25 match (rank 1): mteb's FiQA2018 drops it before scoring
            ("8", "", "Index funds cost: index funds cost."),
        ],
        [("8", "index funds cost"), ("9", "bond coupon"), ("700", "what is a dividend")],
        {"test": [("8", "31", 1.0), ("9", "32", 1.0)], "train": [("700", "31", 1.0)], "dev": [("700", "32", 1.0)]},
    ),
    "trec-covid": (  # float grades 0/1/2 and one -1 (judged non-relevant)
        [
            ("ug7v899j", "Coronavirus transmission", "Transmission of the virus in households."),
            ("02tnwd4m", "Masks", "Surgical masks reduce droplet spread."),
            ("ejv2xln0", "Vaccines", "mRNA vaccine trial results."),
        ],
        [("1", "household transmission"), ("2", "mask droplets"), ("3", "vaccine efficacy")],
        {
            "test": [
                ("1", "ug7v899j", 2.0),
                ("1", "02tnwd4m", 0.0),
                ("2", "02tnwd4m", 1.0),
                ("2", "ejv2xln0", -1.0),
                ("3", "ejv2xln0", -1.0),  # query 3's only judgment is -1: no relevant document, not scored
            ]
        },
    ),
    "hotpotqa": (
        [
            ("Alan Turing", "Alan Turing", "Mathematician and computer scientist."),
            ("Enigma", "Enigma", "A cipher machine."),
        ],
        [("5ab3b0bf", "Which mathematician broke the cipher machine?")],
        {"test": [("5ab3b0bf", "Alan Turing", 1.0), ("5ab3b0bf", "Enigma", 1.0)]},
    ),
    "nq": (
        [("doc0", "Tide", "Tides are caused by the moon."), ("doc1", "Moon", "The moon orbits the earth.")],
        [("test0", "what causes tides")],
        {"test": [("test0", "doc0", 1.0)]},
    ),
}


def pinned() -> dict[str, tuple[str, str]]:
    """subset -> (repo, sha) as benchmarks/text.toml declares them."""
    from evals_repro.benchmarks.declaration import parse_declaration

    decl = parse_declaration(ROOT / "benchmarks" / "text.toml")
    return {s.name: (s.source["repo"], s.source["revision"]) for s in decl.subsets if "repo" in s.source}


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def beir_files(subset: str) -> dict[str, bytes]:
    corpus, queries, qrels = BEIR[subset]
    files = {
        "corpus.jsonl": _jsonl([{"_id": i, "title": t, "text": x} for i, t, x in corpus]),
        "queries.jsonl": _jsonl([{"_id": i, "text": x} for i, x in queries]),
    }
    for split, rows in qrels.items():
        files[f"qrels/{split}.jsonl"] = _jsonl([{"query-id": q, "corpus-id": d, "score": s} for q, d, s in rows])
    qrels_splits = "".join(f"      - split: {split}\n        path: qrels/{split}.jsonl\n" for split in qrels)
    files["README.md"] = (
        "---\nlanguage:\n  - en\nconfigs:\n"
        f"  - config_name: default\n    data_files:\n{qrels_splits}"
        "  - config_name: corpus\n    data_files:\n      - split: corpus\n        path: corpus.jsonl\n"
        "  - config_name: queries\n    data_files:\n      - split: queries\n        path: queries.jsonl\n"
        f"---\n# {subset} (test fixture in the mteb layout)\n"
    ).encode()
    return files


def install(hub):
    """Serve the five mteb copies on `hub` at their pinned shas, once per session."""
    if getattr(hub, "_text_fixtures", False):
        return hub
    for subset, (repo, sha) in pinned().items():
        hub.add_repo(repo, sha, beir_files(subset))
    hub._text_fixtures = True
    return hub


# -- TREC DL through ir_datasets ---------------------------------------------------------------
COLLECTION = [
    "The Manhattan project produced the first atomic bombs.",
    "Atomic bombs were tested in the desert in 1945 by the project team.",
    "Coffee is brewed from roasted beans.",
    "Espresso coffee is strong.",
    "Tea leaves are steeped in hot water.",
]
DL19_QUERIES = [("1001", "atomic bombs project"), ("1002", "coffee"), ("1003", "quantum physics")]
DL19_QRELS = [("1001", "0", 1), ("1001", "1", 3), ("1002", "2", 0), ("1002", "3", 2)]
DL20_QUERIES = [("2001", "tea water"), ("2002", "unjudged query")]
DL20_QRELS = [("2001", "4", 2), ("2001", "2", 0)]


def fill_irds_home(home: Path) -> Path:
    """Write the msmarco-passage cache files into an IR_DATASETS_HOME folder; returns the dataset folder."""
    base = Path(home) / "msmarco-passage"
    (base / "trec-dl-2019").mkdir(parents=True, exist_ok=True)
    (base / "trec-dl-2020").mkdir(parents=True, exist_ok=True)
    (base / "collection.tsv").write_text("".join(f"{pid}\t{text}\n" for pid, text in enumerate(COLLECTION)))
    (base / "irds_version.txt").write_text("v2")
    (base / "trec-dl-2019" / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in DL19_QUERIES))
    (base / "trec-dl-2019" / "qrels").write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in DL19_QRELS))
    (base / "trec-dl-2020" / "queries.tsv.gz").write_bytes(
        gzip.compress("".join(f"{q}\t{t}\n" for q, t in DL20_QUERIES).encode())
    )
    (base / "trec-dl-2020" / "qrels").write_text("".join(f"{q} Q0 {d} {r}\n" for q, d, r in DL20_QRELS))
    return base

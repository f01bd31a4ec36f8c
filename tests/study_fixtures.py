"""Fixtures of the study's Hub datasets in their upstream layouts, written for the tests (no dataset text).

Served by the fake Hub (tests/fakehub.py) at the revisions the declarations pin (`main` for the
unpinned Legal RAG Bench and FreshStack repos, which resolves to the sha below):

- FinanceBench (`mteb/FinanceBenchRetrieval`, as mteb 2.x's push_dataset_to_hub lays it out): parquet
  `corpus/test-*` (id, text), `queries/test-*` (id, text), `qrels/test-*` (query-id, corpus-id, score int);
  README configs `corpus`, `queries`, `qrels`, each with split test. Two questions share a document.
- Legal RAG Bench (`isaacus/legal-rag-bench`): `corpus.jsonl` (id, title, text in Markdown,
  footnotes) and `qa.jsonl` (id, question, answer, relevant_passage_id); configs `corpus`, `qa`,
  split test. Two passages share a text under different ids.
- CUREv1 (`clinia/CUREv1`): `<specialty>/{corpus,qrels,queries-en,queries-es,queries-fr}.jsonl`;
  configs `corpus`, `qrels`, `queries-en`/`-es`/`-fr` whose splits are the ten specialties.
- FreshStack (`freshstack/queries-oct-2024`, `freshstack/corpus-oct-2024`): one config per topic,
  parquet; queries split test with nested `nuggets`, corpus split train.
- FollowIR (`mteb/{Robust04,Core17,News21}InstructionRetrieval`): parquet configs `corpus`,
  `queries`, `instruction`, `qrels`, `top_ranked` (split test) and `qrel_diff` (split qrel_diff).
- ViDoRe v3: tests/hub_fixtures.py's hr and energy, and the hr data at every other domain's pinned revision.

The study prepared on the bundled sample (`prepare_sample`, `copy_study`) serves the tests of the
study's runs: prepared once per module, copied for each test.

Every document text ends with its id, so `scripted_method.ScriptedReranker` can tell them apart.
The langchain and robust04 data are built for hand-computed alpha-nDCG@10, coverage@20 and p-MRR
(see tests/test_study_datasets.py).
"""

from __future__ import annotations

import io
import json
import shutil
import tomllib
from pathlib import Path

import hub_fixtures as hfx

ROOT = Path(__file__).resolve().parents[1]
UNPINNED_SHA = {  # what `main` resolves to on the fake Hub
    "isaacus/legal-rag-bench": "1e6a1000000000000000000000000000000000aa",
    "freshstack/queries-oct-2024": "f5e5000000000000000000000000000000000001",
    "freshstack/corpus-oct-2024": "f5e5000000000000000000000000000000000002",
}


SAMPLE_SUBSETS = ("heat-pumps", "railway-maintenance")


def prepare_sample(root: Path, subsets: tuple[str, ...] = SAMPLE_SUBSETS) -> Path:
    """The study prepared on the bundled sample (BM25 candidates) under `root` (`study/`, `cache/`); returns
    `root`. Preparing is the slow part: a module does it once and each test works on a `copy_study`."""
    from evals_repro.study.prepare import PrepareRequest, prepare

    request = PrepareRequest(
        benchmarks=["sample"], subsets=list(subsets), study_dir=root / "study", cache_dir=root / "cache"
    )
    prepare(request, echo=lambda _line: None)
    return root


def copy_study(prepared: Path, tmp_path: Path) -> Path:
    """A test's own copy of a prepared study and its cache (under `tmp_path`); returns the study folder."""
    shutil.copytree(prepared / "cache", tmp_path / "cache")
    return Path(shutil.copytree(prepared / "study", tmp_path / "study"))


def declared(name: str) -> dict:
    return tomllib.loads((ROOT / "benchmarks" / f"{name}.toml").read_text())


def _jsonl(rows: list[dict]) -> bytes:
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def _parquet(columns: dict, features: dict) -> bytes:
    import datasets

    buffer = io.BytesIO()
    datasets.Dataset.from_dict(columns, features=datasets.Features(features)).to_parquet(buffer)
    return buffer.getvalue()


def _readme(configs: list[tuple[str, list[tuple[str, str]]]]) -> bytes:
    """A card whose YAML declares `configs` as (name, [(split, path), ...])."""
    lines = ["---", "configs:"]
    for name, splits in configs:
        lines += [f"- config_name: {name}", "  data_files:"]
        lines += [f"  - split: {split}\n    path: {path}" for split, path in splits]
    return ("\n".join(lines) + "\n---\n# test fixture\n").encode()


# -- FinanceBench -----------------------------------------------------------------------------------
FINANCE_DOCS = [
    ("000000000", "Revenue for fiscal 2022 was 12.4 billion dollars, up from 11.0 billion."),
    ("000000001", "Capital expenditure in 2021 totalled 810 million dollars for new plants."),
    ("000000002", "The quick ratio stood at 1.3 and inventory turnover at 6 times in 2020."),
]
FINANCE_QUERIES = [
    ("00000", "What was the revenue in fiscal 2022?", "000000000"),
    ("00001", "How much capital expenditure in 2021?", "000000001"),
    ("00002", "What was the quick ratio in 2020?", "000000002"),
    ("00003", "What was inventory turnover in 2020?", "000000002"),  # shares a document, like 00040/00041
]


def financebench_files() -> dict[str, bytes]:
    from datasets import Value

    s = Value("string")
    return {
        "README.md": _readme([(c, [("test", f"{c}/test-*")]) for c in ("corpus", "queries", "qrels")]),
        ".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n",
        "corpus/test-00000-of-00001.parquet": _parquet(
            {"id": [i for i, _ in FINANCE_DOCS], "text": [f"{t} {i}" for i, t in FINANCE_DOCS]}, {"id": s, "text": s}
        ),
        "queries/test-00000-of-00001.parquet": _parquet(
            {"id": [q for q, _, _ in FINANCE_QUERIES], "text": [t for _, t, _ in FINANCE_QUERIES]}, {"id": s, "text": s}
        ),
        "qrels/test-00000-of-00001.parquet": _parquet(
            {
                "query-id": [q for q, _, _ in FINANCE_QUERIES],
                "corpus-id": [d for _, _, d in FINANCE_QUERIES],
                "score": [1] * len(FINANCE_QUERIES),
            },
            {"query-id": s, "corpus-id": s, "score": Value("int64")},
        ),
    }


# -- Legal RAG Bench --------------------------------------------------------------------------------
LEGAL_PASSAGES = [
    ("p-0001", "Murder", "## Elements\n\nThe prosecution must prove an intention to kill."),
    ("p-0002", "Manslaughter", "## Unlawful and dangerous act\n\nAn act a reasonable person sees as risky."),
    ("p-0003", "Self-defence", "## Belief\n\nThe accused believed the conduct was necessary."),
    ("p-0004", "Self-defence", "## Belief\n\nThe accused believed the conduct was necessary."),  # same text
    ("p-0005", "Theft", "## Appropriation\n\nAssuming the rights of an owner over property."),
]
LEGAL_QA = [
    ("q1", "What intention must the prosecution prove for murder?", "p-0001"),
    ("q2", "When is an act unlawful and dangerous for manslaughter?", "p-0002"),
    ("q3", "What must the accused believe for self-defence?", "p-0004"),
]


def legalrag_files() -> dict[str, bytes]:
    return {
        "README.md": _readme([("corpus", [("test", "corpus.jsonl")]), ("qa", [("test", "qa.jsonl")])]),
        "corpus.jsonl": _jsonl(
            [{"id": i, "title": title, "text": f"{text} {i}", "footnotes": ""} for i, title, text in LEGAL_PASSAGES]
        ),
        "qa.jsonl": _jsonl(
            [
                {"id": q, "question": text, "answer": "An answer.", "relevant_passage_id": gold}
                for q, text, gold in LEGAL_QA
            ]
        ),
    }


# -- CUREv1 -----------------------------------------------------------------------------------------
SPECIALTIES = [
    "dentistry_and_oral_health",
    "dermatology",
    "gastroenterology",
    "genetics",
    "neuroscience_and_neurology",
    "orthopedic_surgery",
    "otorhinolaryngology",
    "plastic_surgery",
    "psychiatry_and_psychology",
    "pulmonology",
]


def cure_specialty(specialty: str) -> tuple[list[dict], list[dict], list[dict]]:
    """(corpus, English queries, qrels) of one specialty: 3 passages, 2 questions."""
    word = specialty.split("_")[0]
    corpus = [
        {"_id": f"{word}-d{n}", "title": f"{word.title()} study {n}", "text": f"{body} {word}-d{n}"}
        for n, body in enumerate(
            ["Outcomes of treatment in adults.", "Diagnosis in children and screening.", "Risk factors review."]
        )
    ]
    queries = [
        {"_id": f"{word}-q0", "text": f"{word} treatment outcomes in adults"},
        {"_id": f"{word}-q1", "text": f"{word} screening in children"},
    ]
    qrels = [
        {"query-id": f"{word}-q0", "corpus-id": f"{word}-d0", "score": 2},
        {"query-id": f"{word}-q0", "corpus-id": f"{word}-d2", "score": 1},
        {"query-id": f"{word}-q1", "corpus-id": f"{word}-d1", "score": 2},
    ]
    return corpus, queries, qrels


def cure_files() -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for specialty in SPECIALTIES:
        corpus, queries, qrels = cure_specialty(specialty)
        files[f"{specialty}/corpus.jsonl"] = _jsonl(corpus)
        files[f"{specialty}/qrels.jsonl"] = _jsonl(qrels)
        files[f"{specialty}/queries-en.jsonl"] = _jsonl(queries)
        for lang in ("es", "fr"):  # other languages' queries: never loaded
            files[f"{specialty}/queries-{lang}.jsonl"] = _jsonl(
                [{**q, "text": f"[{lang}] {q['text']}"} for q in queries]
            )
    parts = ["corpus", "qrels", "queries-en", "queries-es", "queries-fr"]
    files["README.md"] = _readme([(part, [(s, f"{s}/{part}.jsonl") for s in SPECIALTIES]) for part in parts])
    return files


# -- FreshStack -------------------------------------------------------------------------------------
TOPICS = ["langchain", "yolo", "laravel", "angular", "godot"]
LC = {  # langchain documents: A..F mention streaming, G does not (BM25 never retrieves it)
    "A": "langchain/docs/streaming.md_0_120",
    "B": "langchain/docs/callbacks.md_0_98",
    "C": "langchain/libs/core/chat_models.py_0_2048",
    "D": "langchain/libs/core/callbacks/base.py_0_512",
    "E": "langchain/docs/how_to/file_output.md_0_300",
    "F": "langchain/docs/concepts/runnables.md_0_256",
    "G": "langchain/docs/install.md_0_64",
}
# query id -> (title, body, [(nugget id, relevant, non-relevant)]). "7800000" prefixes "78000001":
# FreshStack's own nugget-id prefix rule would hand it 78000001's nuggets; the loader must not.
LC_QUERIES = {
    "78000001": (
        "How do I stream tokens",
        "from a chat model callback?",
        [
            ("78000001_0", ["A", "B"], ["E"]),
            ("78000001_1", ["C"], []),
            ("78000001_2", ["D"], []),
            ("78000001_3", ["G"], []),
        ],
    ),
    "78000002": ("Stream output", "to a file", [("78000002_0", ["E"], ["F"])]),
    "7800000": ("Stream runnables", "in sequence", [("7800000_0", ["F"], [])]),
}


def freshstack_topic(topic: str) -> tuple[list[dict], list[dict]]:
    """(corpus rows, query rows) of one topic."""
    if topic == "langchain":
        corpus = [
            {"_id": doc, "text": f"{'Stream tokens and events.' if key != 'G' else 'Install the package.'} {doc}"}
            for key, doc in LC.items()
        ]
        queries = [
            {
                "query_id": qid,
                "query_title": title,
                "query_text": body,
                "nuggets": [
                    {
                        "_id": nid,
                        "text": f"nugget {nid}",
                        "relevant_corpus_ids": [LC[k] for k in rel],
                        "non_relevant_corpus_ids": [LC[k] for k in non],
                    }
                    for nid, rel, non in nuggets
                ],
                "answer_id": f"a{qid}",
                "answer_text": "An answer.",
                "metadata": {"date": "2024-10-01", "tags": [topic]},
            }
            for qid, (title, body, nuggets) in LC_QUERIES.items()
        ]
        return corpus, queries
    docs = [f"{topic}/docs/guide.md_0_100", f"{topic}/src/main.py_0_200"]
    corpus = [{"_id": doc, "text": f"How to configure {topic} projects. {doc}"} for doc in docs]
    queries = [
        {
            "query_id": f"{len(topic)}9000001",
            "query_title": f"Configure {topic}",
            "query_text": "projects from scratch",
            "nuggets": [
                {
                    "_id": f"{len(topic)}9000001_0",
                    "text": "n",
                    "relevant_corpus_ids": [docs[1]],
                    "non_relevant_corpus_ids": [],
                },
                {  # listed both relevant and non-relevant: FreshStack's loader writes 1, then 0 (last wins)
                    "_id": f"{len(topic)}9000001_1",
                    "text": "m",
                    "relevant_corpus_ids": [docs[0]],
                    "non_relevant_corpus_ids": [docs[0]],
                },
            ],
            "answer_id": "a",
            "answer_text": "An answer.",
            "metadata": {"date": "2024-10-02", "tags": [topic]},
        }
    ]
    return corpus, queries


def freshstack_files() -> tuple[dict[str, bytes], dict[str, bytes]]:
    from datasets import List, Value

    nugget = {
        "_id": Value("string"),
        "text": Value("string"),
        "relevant_corpus_ids": List(Value("string")),
        "non_relevant_corpus_ids": List(Value("string")),
    }
    query_features = {
        "query_id": Value("string"),
        "query_title": Value("string"),
        "query_text": Value("string"),
        "nuggets": List(nugget),
        "answer_id": Value("string"),
        "answer_text": Value("string"),
        "metadata": {"date": Value("string"), "tags": List(Value("string"))},
    }
    queries_repo: dict[str, bytes] = {}
    corpus_repo: dict[str, bytes] = {}
    for topic in TOPICS:
        corpus, queries = freshstack_topic(topic)
        columns = {key: [q[key] for q in queries] for key in query_features}
        queries_repo[f"{topic}/test-00000-of-00001.parquet"] = _parquet(columns, query_features)
        corpus_repo[f"{topic}/train-00000-of-00001.parquet"] = _parquet(
            {"_id": [d["_id"] for d in corpus], "text": [d["text"] for d in corpus]},
            {"_id": Value("string"), "text": Value("string")},
        )
    queries_repo["README.md"] = _readme([(t, [("test", f"{t}/test-*")]) for t in TOPICS])
    corpus_repo["README.md"] = _readme([(t, [("train", f"{t}/train-*")]) for t in TOPICS])
    return queries_repo, corpus_repo


# -- FollowIR ---------------------------------------------------------------------------------------
ROBUST_DOCS = {  # D9 shares no term with the queries: BM25 never retrieves it
    "D1": ("FBIS3-1_0", "Safety", "Vehicles with poor brakes."),
    "D2": ("FBIS3-2_0", "Recalls", "Vehicles recalled for airbags."),
    "D3": ("FBIS3-3_0", "Sales", "Vehicles sold abroad."),
    "D4": ("FBIS3-4_0", "Ratings", "Crash ratings of vehicles."),
    "D5": ("FBIS3-5_0", "Tests", "Vehicles in crash tests."),
    "D9": ("FBIS3-9_0", "Weather", "Rain expected on Monday."),
}
# pair -> (query text, og instruction, changed instruction, og qrels, changed qrels, changed docs)
ROBUST_PAIRS = {
    "305": (
        "most dangerous vehicles",
        "Relevant documents discuss the safety of vehicles.",
        "Relevant documents discuss safety ratings from crash tests only.",
        {"D1": 1, "D2": 2, "D3": 0},
        {"D1": 1, "D2": 0, "D3": 0},
        ["D2"],
    ),
    "310": (
        "vehicles crash",
        "Relevant documents report crashes of vehicles.",
        "Relevant documents report crashes of vehicles in tests, not on roads.",
        {"D4": 1, "D5": 1, "D9": 1},
        {"D4": 0, "D5": 1, "D9": 0},
        ["D4", "D9"],
    ),
}


def followir_data(task: str) -> tuple[dict, dict]:
    """(docs key -> (id, title, text), pairs) of one task; core17 and news21 reuse robust04's with a prefix."""
    if task == "robust04":
        return ROBUST_DOCS, ROBUST_PAIRS
    docs = {k: (f"{task}-{doc}", title, text) for k, (doc, title, text) in ROBUST_DOCS.items()}
    return docs, {"401": ROBUST_PAIRS["305"]}


def followir_files(task: str) -> dict[str, bytes]:
    from datasets import List, Value

    docs, pairs = followir_data(task)
    s = Value("string")
    qids = [f"{p}-{v}" for p in pairs for v in ("og", "changed")]
    files = {
        "corpus/test-00000-of-00001.parquet": _parquet(
            {
                "_id": [d[0] for d in docs.values()],
                "text": [f"{d[2]} {d[0]}" for d in docs.values()],
                "title": [d[1] for d in docs.values()],
            },
            {"_id": s, "text": s, "title": s},
        ),
        "queries/test-00000-of-00001.parquet": _parquet(
            {"_id": qids, "text": [pairs[q.rsplit("-", 1)[0]][0] for q in qids]}, {"_id": s, "text": s}
        ),
        "instruction/test-00000-of-00001.parquet": _parquet(
            {
                "query-id": qids,
                "instruction": [pairs[q.rsplit("-", 1)[0]][1 if q.endswith("-og") else 2] for q in qids],
            },
            {"query-id": s, "instruction": s},
        ),
        "top_ranked/test-00000-of-00001.parquet": _parquet(
            {"query-id": qids, "corpus-ids": [[d[0] for d in docs.values()] for _ in qids]},
            {"query-id": s, "corpus-ids": List(s)},
        ),
        "qrel_diff/qrel_diff-00000-of-00001.parquet": _parquet(
            {"query-id": list(pairs), "corpus-ids": [[docs[k][0] for k in p[5]] for p in pairs.values()]},
            {"query-id": s, "corpus-ids": List(s)},
        ),
    }
    rows = [
        (f"{pair}-{variant}", docs[key][0], grade)
        for pair, spec in pairs.items()
        for variant, judged in (("og", spec[3]), ("changed", spec[4]))
        for key, grade in judged.items()
    ]
    files["qrels/test-00000-of-00001.parquet"] = _parquet(
        {"query-id": [r[0] for r in rows], "corpus-id": [r[1] for r in rows], "score": [r[2] for r in rows]},
        {"query-id": s, "corpus-id": s, "score": Value("int64")},
    )
    configs = [(c, [("test", f"{c}/test-*")]) for c in ("corpus", "queries", "instruction", "qrels", "top_ranked")]
    files["README.md"] = _readme([*configs, ("qrel_diff", [("qrel_diff", "qrel_diff/qrel_diff-*")])])
    return files


# -- serving --------------------------------------------------------------------------------------
def install(hub):
    """Serve every study fixture repo on `hub` once per session (with the ViDoRe hr fixture at all domains)."""
    if getattr(hub, "_study_fixtures", False):
        return hub
    hfx.install(hub)
    fb = declared("financebench")["source"]
    hub.add_repo(fb["repo"], fb["revision"], financebench_files())
    lr = declared("legalragbench")["source"]
    hub.add_repo(lr["repo"], UNPINNED_SHA[lr["repo"]], legalrag_files())
    cure = declared("cure")["source"]
    hub.add_repo(cure["repo"], cure["revision"], cure_files())
    fs = declared("freshstack")["source"]
    queries, corpus = freshstack_files()
    hub.add_repo(fs["repo"], UNPINNED_SHA[fs["repo"]], queries)
    hub.add_repo(fs["corpus_repo"], UNPINNED_SHA[fs["corpus_repo"]], corpus)
    for task, spec in declared("followir")["subsets"].items():
        hub.add_repo(spec["repo"], spec["revision"], followir_files(task))
    vidore = declared("vidore-v3")
    raw = hfx.vidore_raw_files()
    for domain, spec in vidore["subsets"].items():
        repo = vidore["source"]["repo"].format(subset=domain)
        if spec["revision"] not in hub.repos.get(repo, {}):  # hr and energy have fixtures of their own
            hub.add_repo(repo, spec["revision"], raw)
    hub._study_fixtures = True
    return hub

"""Small fixture repos in the exact upstream Hub layouts (see ../shared/docs/hub-layouts.md).

Everything here is written for the tests: a few pages with small solid-colour PNGs (100x140),
queries in six languages whose row order interleaves languages (so only the `language` column
can tell them apart), graded qrels (1/2), one page with empty markdown, gold answers, and per
qrel row each annotator's bounding boxes with one modality (`content_type`) per box. Parquet files are written by `datasets`
itself so their schema metadata carries the `Image` feature exactly as `push_to_hub` does.
"""

from __future__ import annotations

import io

LANGUAGES = ["english", "french", "german", "italian", "portuguese", "spanish"]

# Pinned shas from benchmarks/vidore-v3.toml, benchmarks/vidore-v3-mteb.toml and miracl-vision.toml.
HR_REPO = "vidore/vidore_v3_hr"
HR_EVAL_SHA = "95f2f83a5a09590a89e34960479f9438e48bca77"
HR_MAIN_SHA = "0cdf0979f2c5a0fd3e335e6373b9da48a9fe3bc3"
HR_MTEB_REPO = "vidore/vidore_v3_hr_mteb_format"
HR_MTEB_SHA = "bc7d43d64815ed30f664168c8052106484aba7fd"
MIRACL_REPO = "nvidia/miracl-vision"
MIRACL_SHA = "309e1696433408fbd555959cf1da968f3814f8b6"
HR_UNCACHED_SHA = "c0ffee" + "0" * 34  # served, but no test loads it online
ENERGY_REPO = "vidore/vidore_v3_energy"
ENERGY_SHA = "caec06d3c73434d635f710f93bcd898331c59f20"  # benchmarks/vidore-v3.toml pins main
OCR_REPO = "fixture/vidore_v3_hr_ocr"  # an mteb OCR-style repo (corpus text column), declared in a test
OCR_SHA = "4d42cf85d8b8117935c04698b5b7fd3c70c8c9f4"


def install(hub):
    """Serve every fixture repo on `hub` (a tests/fakehub.FakeHub), once per session.

    hr: the eval commit (5 pages), main (6 pages) and a commit no test downloads online;
    energy: main (2 pages, one French-native question).
    """
    if getattr(hub, "_evals_fixtures", False):
        return hub
    hub.add_repo(HR_REPO, HR_MAIN_SHA, vidore_raw_files(extra_page=True))
    hub.add_repo(HR_REPO, HR_UNCACHED_SHA, vidore_raw_files(extra_page=True), branch=None)
    hub.add_repo(HR_REPO, HR_EVAL_SHA, vidore_raw_files(), branch=None)
    hub.add_repo(ENERGY_REPO, ENERGY_SHA, energy_raw_files())
    hub.add_repo(HR_MTEB_REPO, HR_MTEB_SHA, vidore_mteb_files())
    hub.add_repo(OCR_REPO, OCR_SHA, vidore_mteb_files(with_text=True))
    hub.add_repo(MIRACL_REPO, MIRACL_SHA, miracl_files())
    hub._evals_fixtures = True
    return hub


PAGE_SIZE = (100, 140)  # width, height in pixels: the bounding boxes below are in these pixels


def png(rgb: tuple[int, int, int], size: tuple[int, int] = PAGE_SIZE) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, rgb).save(buffer, format="PNG")
    return buffer.getvalue()


# -- ViDoRe v3 raw (hr) ------------------------------------------------------------------------
# corpus_id -> (doc_id, page_number_in_doc, markdown, colour)
HR_PAGES = [
    (0, "eu_leave_report", 0, "Annual leave policy: employees receive twenty five days of paid leave.", (255, 0, 0)),
    (1, "eu_leave_report", 1, "Remote work allowance and telework rules for staff.", (0, 255, 0)),
    (2, "eu_leave_report", 2, "Pension contributions table for the year.", (0, 0, 255)),
    (3, "eu_skills_report", 0, "Training budget chart by department and region.", (255, 255, 0)),
    (4, "eu_skills_report", 1, "", (0, 255, 255)),  # an image-only page: empty markdown
]
# Two questions, each asked in six languages; (text per language).
HR_QUESTIONS = {
    "leave": {
        "english": "How many days of paid leave do employees receive?",
        "french": "Combien de jours de congés payés les employés reçoivent-ils ?",
        "german": "Wie viele Tage bezahlten Urlaub erhalten Mitarbeiter?",
        "italian": "Quanti giorni di ferie retribuite ricevono i dipendenti?",
        "portuguese": "Quantos dias de férias pagas os funcionários recebem?",
        "spanish": "¿Cuántos días de vacaciones pagadas reciben los empleados?",
    },
    "training": {
        "english": "training budget by department",
        "french": "budget de formation par département",
        "german": "Schulungsbudget nach Abteilung",
        "italian": "budget di formazione per reparto",
        "portuguese": "orçamento de formação por departamento",
        "spanish": "presupuesto de formación por departamento",
    },
}
HR_QUESTION_META = {
    "leave": {"query_types": ["extractive", "numerical"], "query_format": "question", "content_type": ["Text"]},
    "training": {"query_types": ["open-ended"], "query_format": "keyword", "content_type": ["Chart", "Table"]},
}
# Positive qrels per question: corpus_id -> grade.
HR_QUESTION_QRELS = {"leave": {0: 2, 2: 1}, "training": {3: 2, 4: 1, 1: 1}}
# Gold final answers (the `answer` column), the same for every language copy of a question.
HR_ANSWERS = {
    "leave": "Employees receive twenty five days of paid leave.",
    "training": "The training budget chart breaks the budget down by department and region.",
}
# Per question and page: (annotator, x1, x2, y1, y2, modality) in page pixels, the qrels row's
# `bounding_boxes` with `content_type` listing one modality per box. Hand-computed agreement is in
# tests/test_vidore_agreement.py: page 0 overlapping Text boxes; page 2 three annotators (nested and
# disjoint); page 3 an annotator with two boxes against one; page 4 a single annotator; page 1 none.
HR_BOXES = {
    "leave": {
        0: [(0, 10, 60, 10, 40, "Text"), (1, 20, 70, 10, 40, "Text")],
        2: [(0, 0, 50, 0, 50, "Table"), (1, 10, 40, 10, 40, "Table"), (2, 60, 90, 60, 90, "Table")],
    },
    "training": {
        3: [(0, 0, 40, 0, 40, "Chart"), (0, 50, 90, 0, 40, "Table"), (1, 20, 70, 0, 40, "Chart")],
        4: [(0, 5, 95, 5, 60, "Image")],
        1: [],
    },
}
# query rows in file order: (query_id, question, language). Languages interleave; ids do not
# group by language, so neither row position nor id ranges reveal a query's language.
HR_QUERY_ROWS = [
    (0, "leave", "english"),
    (1, "leave", "french"),
    (2, "training", "english"),
    (3, "leave", "spanish"),
    (4, "training", "german"),
    (5, "leave", "german"),
    (6, "leave", "italian"),
    (7, "training", "french"),
    (8, "training", "portuguese"),
    (9, "training", "italian"),
    (10, "leave", "portuguese"),
    (11, "training", "spanish"),
]

RAW_README = """---
license: cc-by-4.0
dataset_info:
- config_name: corpus
  features:
  - name: corpus_id
    dtype: int64
  - name: image
    dtype: image
  - name: doc_id
    dtype: string
  - name: markdown
    dtype: string
  - name: page_number_in_doc
    dtype: int64
  splits:
  - name: test
    num_bytes: 1000
    num_examples: {n_pages}
- config_name: documents_metadata
  features:
  - name: file_name
    dtype: string
  - name: doc_id
    dtype: string
  splits:
  - name: test
    num_bytes: 100
    num_examples: 2
- config_name: qrels
  features:
  - name: query_id
    dtype: int64
  - name: corpus_id
    dtype: int64
  - name: score
    dtype: int64
  - name: content_type
    list: string
  - name: bounding_boxes
    list:
    - name: annotator
      dtype: int64
    - name: x1
      dtype: int64
    - name: x2
      dtype: int64
    - name: y1
      dtype: int64
    - name: y2
      dtype: int64
  splits:
  - name: test
    num_bytes: 1000
    num_examples: {n_qrels}
- config_name: queries
  features:
  - name: query_id
    dtype: int64
  - name: query
    dtype: string
  - name: language
    dtype: string
  - name: query_types
    list: string
  - name: query_format
    dtype: string
  - name: content_type
    list: string
  - name: raw_answers
    list: string
  - name: query_generator
    dtype: string
  - name: query_generation_pipeline
    dtype: string
  - name: source_type
    dtype: string
  - name: query_type_for_generation
    dtype: string
  - name: answer
    dtype: string
  splits:
  - name: test
    num_bytes: 1000
    num_examples: {n_queries}
configs:
- config_name: corpus
  data_files:
  - split: test
    path: corpus/test-*
- config_name: documents_metadata
  data_files:
  - split: test
    path: documents_metadata/test-*
- config_name: qrels
  data_files:
  - split: test
    path: qrels/test-*
- config_name: queries
  data_files:
  - split: test
    path: queries/test-*
---
# ViDoRe v3 {title} (test fixture)
"""


def _parquet(columns: dict, features: dict) -> bytes:
    """One parquet file as `push_to_hub` writes it (schema metadata names the HF features)."""
    import datasets

    dataset = datasets.Dataset.from_dict(columns, features=datasets.Features(features))
    buffer = io.BytesIO()
    dataset.to_parquet(buffer)
    return buffer.getvalue()


def vidore_raw_files(extra_page: bool = False) -> dict[str, bytes]:
    """The raw `vidore/vidore_v3_hr` layout; `extra_page` adds a sixth page (another revision)."""
    pages = list(HR_PAGES)
    if extra_page:
        pages.append((5, "eu_skills_report", 2, "Apprenticeship numbers by country.", (128, 128, 128)))
    return raw_domain_files(
        pages, HR_QUERY_ROWS, HR_QUESTIONS, HR_QUESTION_META, HR_QUESTION_QRELS, HR_ANSWERS, HR_BOXES, "HR"
    )


# -- ViDoRe v3 raw (energy): a second domain, French documents -----------------------------------
ENERGY_PAGES = [
    (0, "rte_bilan", 0, "Capacité installée du parc éolien : 12 GW en fin d'année.", (200, 100, 0)),
    (1, "rte_bilan", 1, "Carte des installations solaires par région.", (0, 100, 200)),
]
ENERGY_QUESTIONS = {
    "capacity": {
        "english": "What is the installed wind capacity?",
        "french": "Quelle est la capacité éolienne installée ?",
        "german": "Wie hoch ist die installierte Windkapazität?",
        "italian": "Qual è la capacità eolica installata?",
        "portuguese": "Qual é a capacidade eólica instalada?",
        "spanish": "¿Cuál es la capacidad eólica instalada?",
    }
}
ENERGY_QUESTION_META = {
    "capacity": {"query_types": ["numerical"], "query_format": "question", "content_type": ["Text", "Image"]}
}
ENERGY_QUESTION_QRELS = {"capacity": {0: 2, 1: 1}}
ENERGY_ANSWERS = {"capacity": "12 GW"}
ENERGY_BOXES = {
    "capacity": {
        0: [(0, 0, 100, 0, 20, "Text"), (1, 0, 100, 0, 20, "Text")],  # identical zones
        1: [(0, 0, 10, 0, 10, "Image"), (1, 50, 60, 50, 60, "Image")],  # disjoint zones
    }
}
ENERGY_QUERY_ROWS = [
    (0, "capacity", "spanish"),
    (1, "capacity", "french"),
    (2, "capacity", "english"),
    (3, "capacity", "italian"),
    (4, "capacity", "german"),
    (5, "capacity", "portuguese"),
]


def energy_raw_files() -> dict[str, bytes]:
    return raw_domain_files(
        ENERGY_PAGES,
        ENERGY_QUERY_ROWS,
        ENERGY_QUESTIONS,
        ENERGY_QUESTION_META,
        ENERGY_QUESTION_QRELS,
        ENERGY_ANSWERS,
        ENERGY_BOXES,
        "Energy",
    )


def raw_domain_files(
    pages, rows, questions, meta, question_qrels, answers, boxes, title, size: tuple[int, int] = PAGE_SIZE
) -> dict[str, bytes]:
    """One raw `vidore/vidore_v3_<domain>` repo: corpus, queries, qrels, documents_metadata, pdfs;
    page images of `size` (width, height)."""
    from datasets import Image, List, Value

    corpus = _parquet(
        {
            "corpus_id": [p[0] for p in pages],
            "image": [{"bytes": png(p[4], size), "path": None} for p in pages],
            "doc_id": [p[1] for p in pages],
            "markdown": [p[3] for p in pages],
            "page_number_in_doc": [p[2] for p in pages],
        },
        {
            "corpus_id": Value("int64"),
            "image": Image(),
            "doc_id": Value("string"),
            "markdown": Value("string"),
            "page_number_in_doc": Value("int64"),
        },
    )
    queries = _parquet(
        {
            "query_id": [r[0] for r in rows],
            "query": [questions[r[1]][r[2]] for r in rows],
            "language": [r[2] for r in rows],
            "query_types": [meta[r[1]]["query_types"] for r in rows],
            "query_format": [meta[r[1]]["query_format"] for r in rows],
            "content_type": [meta[r[1]]["content_type"] for r in rows],
            "raw_answers": [[answers[r[1]]] for r in rows],
            "query_generator": ["human" for _ in rows],
            "query_generation_pipeline": [None for _ in rows],
            "source_type": ["summary" for _ in rows],
            "query_type_for_generation": [meta[r[1]]["query_types"][0] for r in rows],
            "answer": [answers[r[1]] for r in rows],
        },
        {
            "query_id": Value("int64"),
            "query": Value("string"),
            "language": Value("string"),
            "query_types": List(Value("string")),
            "query_format": Value("string"),
            "content_type": List(Value("string")),
            "raw_answers": List(Value("string")),
            "query_generator": Value("string"),
            "query_generation_pipeline": Value("string"),
            "source_type": Value("string"),
            "query_type_for_generation": Value("string"),
            "answer": Value("string"),
        },
    )
    # Every language copy of a question carries the question's qrels and boxes.
    qrel_rows = [
        (qid, cid, grade, boxes[question].get(cid, []))
        for qid, question, _ in rows
        for cid, grade in question_qrels[question].items()
    ]
    box_keys = ("annotator", "x1", "x2", "y1", "y2")
    qrels = _parquet(
        {
            "query_id": [r[0] for r in qrel_rows],
            "corpus_id": [r[1] for r in qrel_rows],
            "score": [r[2] for r in qrel_rows],
            "content_type": [[b[5] for b in r[3]] for r in qrel_rows],
            "bounding_boxes": [[dict(zip(box_keys, b[:5])) for b in r[3]] for r in qrel_rows],
        },
        {
            "query_id": Value("int64"),
            "corpus_id": Value("int64"),
            "score": Value("int64"),
            "content_type": List(Value("string")),
            "bounding_boxes": List({k: Value("int64") for k in box_keys}),
        },
    )
    doc_ids = sorted({p[1] for p in pages})
    documents = _parquet(
        {"file_name": [f"{d}.pdf" for d in doc_ids], "doc_id": doc_ids},
        {"file_name": Value("string"), "doc_id": Value("string")},
    )
    readme = RAW_README.format(n_pages=len(pages), n_qrels=len(qrel_rows), n_queries=len(rows), title=title)
    return {
        ".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n",
        "README.md": readme.encode(),
        "corpus/test-00000-of-00001.parquet": corpus,
        "queries/test-00000-of-00001.parquet": queries,
        "qrels/test-00000-of-00001.parquet": qrels,
        "documents_metadata/test-00000-of-00001.parquet": documents,
        "pdfs/metadata.csv": ("file_name,doc_id\n" + "".join(f"{d}.pdf,{d}\n" for d in doc_ids)).encode(),
    }


# -- ViDoRe v3 mteb-format (hr) ----------------------------------------------------------------
def vidore_mteb_files(with_text: bool = False) -> dict[str, bytes]:
    """`{lang}-corpus/-queries/-qrels` configs; every `{lang}-qrels` holds all languages' qrels.

    `with_text` adds the corpus `text` column, as the mteb OCR repos carry it.
    """
    from datasets import Image, Value

    corpus_columns = {
        "image": [{"bytes": png(p[4]), "path": None} for p in HR_PAGES],
        "id": [f"corpus-test-{p[0]}" for p in HR_PAGES],
    }
    corpus_features = {"image": Image(), "id": Value("string")}
    if with_text:
        corpus_columns["text"] = [p[3] for p in HR_PAGES]
        corpus_features["text"] = Value("string")
    corpus = _parquet(corpus_columns, corpus_features)
    all_qrels = [
        (f"query-test-{qid}", f"corpus-test-{cid}", grade)
        for qid, question, _ in HR_QUERY_ROWS
        for cid, grade in HR_QUESTION_QRELS[question].items()
    ]
    qrels = _parquet(
        {
            "query-id": [r[0] for r in all_qrels],
            "corpus-id": [r[1] for r in all_qrels],
            "score": [r[2] for r in all_qrels],
        },
        {"query-id": Value("string"), "corpus-id": Value("string"), "score": Value("int64")},
    )
    files: dict[str, bytes] = {".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"}
    yaml_info, yaml_configs = [], []
    corpus_yaml = "\n".join(
        f"  - name: {name}\n    dtype: {'image' if name == 'image' else 'string'}" for name in corpus_features
    )
    for lang in LANGUAGES:
        rows = [r for r in HR_QUERY_ROWS if r[2] == lang]
        files[f"{lang}-corpus/test-00000-of-00001.parquet"] = corpus
        files[f"{lang}-qrels/test-00000-of-00001.parquet"] = qrels
        files[f"{lang}-queries/test-00000-of-00001.parquet"] = _parquet(
            {
                "language": [lang for _ in rows],
                "id": [f"query-test-{r[0]}" for r in rows],
                "text": [HR_QUESTIONS[r[1]][lang] for r in rows],
            },
            {"language": Value("string"), "id": Value("string"), "text": Value("string")},
        )
        yaml_info += [
            f"- config_name: {lang}-corpus\n  features:\n{corpus_yaml}\n"
            f"  splits:\n  - name: test\n    num_examples: {len(HR_PAGES)}",
            f"- config_name: {lang}-qrels\n  features:\n  - name: query-id\n    dtype: string\n"
            f"  - name: corpus-id\n    dtype: string\n  - name: score\n    dtype: int64\n"
            f"  splits:\n  - name: test\n    num_examples: {len(all_qrels)}",
            f"- config_name: {lang}-queries\n  features:\n  - name: language\n    dtype: string\n"
            f"  - name: id\n    dtype: string\n  - name: text\n    dtype: string\n"
            f"  splits:\n  - name: test\n    num_examples: {len(rows)}",
        ]
        yaml_configs += [
            f"- config_name: {lang}-{part}\n  data_files:\n  - split: test\n    path: {lang}-{part}/test-*"
            for part in ("corpus", "qrels", "queries")
        ]
    files["README.md"] = (
        "---\ndataset_info:\n"
        + "\n".join(yaml_info)
        + "\nconfigs:\n"
        + "\n".join(yaml_configs)
        + "\n---\n# ViDoRe v3 HR, mteb format (test fixture)\n"
    ).encode()
    return files


# -- MIRACL-VISION ------------------------------------------------------------------------------
# Per language: corpus rows (_id, title, text, image_id), queries, qrels with score-0 negatives.
MIRACL_DATA = {
    "en": {
        "corpus": [
            ("0", "Zebra", "Zebras are African equines with black and white stripes.", "en_img_0.png"),
            ("1", "Horse", "The horse is a domesticated one-toed hoofed mammal.", "en_img_1.png"),
            ("2", "Stripe (pattern)", "A stripe is a band of colour.", "en_img_2.png"),
        ],
        "queries": [
            ("q1", "why do zebras have stripes"),
            ("q2", "horse domestication"),
            ("q3", "a query judged only negative"),
        ],
        "qrels": [("q1", "0", 1), ("q1", "2", 1), ("q1", "1", 0), ("q2", "1", 1), ("q2", "0", 0), ("q3", "2", 0)],
    },
    "sw": {
        "corpus": [
            ("0", "Punda milia", "Punda milia ni wanyama wenye milia.", "sw_img_0.png"),
            ("1", "Farasi", "Farasi ni mnyama wa kufugwa.", "sw_img_1.png"),
        ],
        "queries": [("s1", "punda milia ana milia kwa nini")],
        "qrels": [("s1", "0", 1), ("s1", "1", 0)],
    },
}


def miracl_files() -> dict[str, bytes]:
    """`{l}/corpus|images|queries|qrels.parquet` with configs `corpus-{l}`... and split `default`.

    The images file lists its rows in another order than the corpus, so only the
    `image_id` <-> `file_name` join can pair them.
    """
    from datasets import Image, Value

    files: dict[str, bytes] = {".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"}
    configs = []
    for lang, data in MIRACL_DATA.items():
        corpus = data["corpus"]
        files[f"{lang}/corpus.parquet"] = _parquet(
            {
                "_id": [r[0] for r in corpus],
                "title": [r[1] for r in corpus],
                "text": [r[2] for r in corpus],
                "image_id": [r[3] for r in corpus],
            },
            {"_id": Value("string"), "title": Value("string"), "text": Value("string"), "image_id": Value("string")},
        )
        images = list(reversed(corpus))
        files[f"{lang}/images.parquet"] = _parquet(
            {
                "file_name": [r[3] for r in images],
                "image": [{"bytes": png((10 * int(r[0]), 20, 30)), "path": None} for r in images],
            },
            {"file_name": Value("string"), "image": Image()},
        )
        files[f"{lang}/queries.parquet"] = _parquet(
            {"_id": [r[0] for r in data["queries"]], "text": [r[1] for r in data["queries"]]},
            {"_id": Value("string"), "text": Value("string")},
        )
        files[f"{lang}/qrels.parquet"] = _parquet(
            {
                "query-id": [r[0] for r in data["qrels"]],
                "corpus-id": [r[1] for r in data["qrels"]],
                "score": [r[2] for r in data["qrels"]],
            },
            {"query-id": Value("string"), "corpus-id": Value("string"), "score": Value("int64")},
        )
        configs += [
            f"- config_name: {part}-{lang}\n  data_files:\n  - split: default\n    path: {lang}/{part}.parquet"
            for part in ("corpus", "images", "qrels", "queries")
        ]
    files["README.md"] = ("---\nconfigs:\n" + "\n".join(configs) + "\n---\n# MIRACL-VISION (test fixture)\n").encode()
    files["eval_example/README.md"] = b"example\n"
    return files


def expected_image(lang: str, corpus_id: str) -> bytes:
    return png((10 * int(corpus_id), 20, 30))

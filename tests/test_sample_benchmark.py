"""The bundled `sample` benchmark, and the BEIR loader behind it and behind `--benchmark PATH`."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from evals_repro.base.data import check_subset
from evals_repro.base.errors import DataError, UsageError
from evals_repro.benchmarks import get_benchmark, load_subset

LANGUAGES = {"english": "en", "french": "fr", "german": "de", "spanish": "es"}
NATIVE = {"heat-pumps": "english", "railway-maintenance": "french", "clinical-trials": "english"}
QUERY_TYPES = {"extractive", "numerical", "boolean", "compare-contrast", "enumerative", "open-ended"}
QUERY_FORMATS = {"question", "keyword", "instruction"}
CONTENT_TYPES = {"text", "table", "mixed"}


@pytest.fixture(scope="module")
def sample():
    decl = get_benchmark("sample")
    return decl, {name: load_subset(decl, name) for name in decl.subset_names}


def test_declaration(sample):
    decl, _ = sample
    assert decl.name == "sample"
    assert decl.loader == "beir"
    assert decl.study is False  # not one of the study's seven groups; `--benchmark sample` names it
    assert decl.description
    assert decl.query_languages == list(LANGUAGES)
    assert {s.name: s.native_language for s in decl.subsets} == NATIVE


def test_total_size(sample):
    _, subsets = sample
    assert sum(len(s.pages) for s in subsets.values()) >= 90


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_subset_counts_and_languages(sample, name):
    _, subsets = sample
    subset = subsets[name]
    assert subset.native_language == NATIVE[name]
    assert len(subset.pages) >= 30
    by_need: dict[str, list] = defaultdict(list)
    for query in subset.queries:
        by_need[query.metadata["need"]].append(query)
    assert len(by_need) >= 24
    for need, copies in by_need.items():
        assert sorted(q.language for q in copies) == sorted(LANGUAGES), need
        for query in copies:
            assert query.id == f"{need}-{LANGUAGES[query.language]}"
    assert Counter(q.language for q in subset.queries) == {lang: len(by_need) for lang in LANGUAGES}


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_subset_qrels(sample, name):
    _, subsets = sample
    subset = subsets[name]
    report = check_subset(subset)  # raises on any fatal problem
    assert report.problems == {}
    page_ids = {p.id for p in subset.pages}
    by_need: dict[str, list] = defaultdict(list)
    for query in subset.queries:
        judged = subset.qrels[query.id]
        assert set(judged.values()) <= {1, 2}
        assert 2 in judged.values(), f"{query.id} has no fully relevant page"
        assert 1 <= len(judged) <= 4
        assert set(judged) <= page_ids
        by_need[query.metadata["need"]].append(judged)
    for need, judgments in by_need.items():
        assert all(j == judgments[0] for j in judgments), f"language copies of {need} differ"
    # Graded for real: partly relevant pages exist, and not every need has a single answer.
    grades = Counter(g for q in subset.queries for g in subset.qrels[q.id].values())
    assert grades[1] >= 10 and grades[2] >= len(subset.queries)


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_subset_metadata_and_pages(sample, name):
    _, subsets = sample
    subset = subsets[name]
    for query in subset.queries:
        meta = query.metadata
        assert meta["query_type"] in QUERY_TYPES, query.id
        assert meta["query_format"] in QUERY_FORMATS, query.id
        assert meta["content_type"] in CONTENT_TYPES, query.id
        assert query.text.strip()
    used = lambda field: {q.metadata[field] for q in subset.queries}  # noqa: E731
    assert used("query_type") == QUERY_TYPES
    assert used("query_format") == QUERY_FORMATS
    for page in subset.pages:
        assert page.title
        assert page.text.lstrip().startswith("#"), page.id  # markdown with a heading
        assert 100 <= len(page.text.split()) <= 350, page.id
    assert sum("|---" in p.text for p in subset.pages) >= 10  # tables on many pages


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_pages_are_in_the_native_language(sample, name):
    """Function words give the language away: French pages use le/la/les, English ones the/and."""
    _, subsets = sample
    words = Counter(w for p in subsets[name].pages for w in re.findall(r"[a-zàâçéèêëîïôûùüÿœ]+", p.text.lower()))
    english = words["the"] + words["and"] + words["of"]
    french = words["le"] + words["la"] + words["les"] + words["et"]
    if NATIVE[name] == "english":
        assert english > 10 * max(french, 1)
    else:
        assert french > 10 * max(english, 1)


# --- the BEIR loader on user folders -------------------------------------------------------------


def _write_beir(folder: Path, corpus=None, queries=None, qrels=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    corpus = (
        corpus
        if corpus is not None
        else [
            json.dumps({"_id": "d1", "title": "One", "text": "alpha beta"}),
            json.dumps({"_id": "d2", "title": "Two", "text": "gamma\u2028delta"}),
        ]
    )
    queries = (
        queries
        if queries is not None
        else [
            json.dumps({"_id": "q1", "text": "alpha", "language": "german", "metadata": {"query_type": "extractive"}}),
            json.dumps({"_id": "q2", "text": "gamma"}),
            json.dumps({"_id": "q-train", "text": "not judged in test"}),
        ]
    )
    qrels = qrels if qrels is not None else ["query-id\tcorpus-id\tscore", "q1\td1\t2", "q2\td2\t1"]
    if corpus is not False:
        (folder / "corpus.jsonl").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    if queries is not False:
        (folder / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    if qrels is not False:
        (folder / "qrels").mkdir(exist_ok=True)
        (folder / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return folder


def _load(folder: Path):
    decl = get_benchmark(str(folder))
    return load_subset(decl, decl.subset_names[0])


def test_user_folder_resolves_and_loads(tmp_path):
    folder = _write_beir(tmp_path / "mydata")
    decl = get_benchmark(str(folder))
    assert decl.name == "mydata" and decl.loader == "beir"
    assert decl.subset_names == ["mydata"]
    subset = load_subset(decl, "mydata")
    assert [p.id for p in subset.pages] == ["d1", "d2"]
    assert subset.pages[1].text == "gamma\u2028delta"  # U+2028 inside a JSON string is not a line break
    # Queries of other splits are dropped; language defaults to the subset's native language.
    assert [(q.id, q.language) for q in subset.queries] == [("q1", "german"), ("q2", "english")]
    assert subset.queries[0].metadata == {"query_type": "extractive"}
    assert subset.qrels == {"q1": {"d1": 2}, "q2": {"d2": 1}}


def test_user_folder_given_as_dot_is_named_after_the_folder(tmp_path, monkeypatch):
    folder = _write_beir(tmp_path / "relative-data")
    monkeypatch.chdir(folder)
    decl = get_benchmark(".")
    assert decl.name == "relative-data" and decl.subset_names == ["relative-data"]
    assert len(load_subset(decl, "relative-data").pages) == 2


def test_folder_of_beir_folders_gives_one_subset_each(tmp_path):
    _write_beir(tmp_path / "bench" / "b-sub")
    _write_beir(tmp_path / "bench" / "a-sub")
    (tmp_path / "bench" / "notes").mkdir()
    decl = get_benchmark(str(tmp_path / "bench"), language="french")
    assert decl.subset_names == ["a-sub", "b-sub"]
    assert load_subset(decl, "b-sub").native_language == "french"


def test_unknown_benchmark_names_the_choices(tmp_path):
    with pytest.raises(UsageError) as err:
        get_benchmark(str(tmp_path / "nowhere"))
    assert "sample" in err.value.one_line()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match="no corpus.jsonl"):
        get_benchmark(str(empty))


def test_missing_file(tmp_path):
    folder = _write_beir(tmp_path / "noqrels", qrels=False)
    with pytest.raises(DataError) as err:
        _load(folder)
    assert f"{folder / 'qrels' / 'test.tsv'}: file not found" in err.value.one_line()


def test_garbled_json_line_names_file_and_line(tmp_path):
    folder = _write_beir(
        tmp_path / "garbled", corpus=[json.dumps({"_id": "d1", "text": "ok"}), '{"_id": "d2", "text": ']
    )
    with pytest.raises(DataError) as err:
        _load(folder)
    assert f"{folder / 'corpus.jsonl'}:2: not valid JSON" in err.value.one_line()


def test_missing_field_names_file_line_and_field(tmp_path):
    folder = _write_beir(
        tmp_path / "nofield", queries=[json.dumps({"_id": "q1", "text": "a"}), json.dumps({"_id": "q2"})]
    )
    with pytest.raises(DataError) as err:
        _load(folder)
    assert f"{folder / 'queries.jsonl'}:2: missing field text" in err.value.one_line()


def test_non_object_line(tmp_path):
    folder = _write_beir(tmp_path / "list", corpus=["[1, 2]"])
    with pytest.raises(DataError, match=r"corpus.jsonl:1: expected a JSON object"):
        _load(folder)


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (["query-id\tcorpus-id\tscore", "q1\td1\t2", "q2 d2 1"], "test.tsv:3: expected 3 tab-separated columns, got 1"),
        (["query-id\tcorpus-id\tscore", "q1\td1\thigh"], "test.tsv:2: score 'high' is not an integer"),
        (["query-id\tcorpus-id\tscore"], "test.tsv: no judgments after the header"),
    ],
)
def test_bad_qrels(tmp_path, rows, expected):
    folder = _write_beir(tmp_path / "badqrels", qrels=rows)
    with pytest.raises(DataError) as err:
        _load(folder)
    assert expected in err.value.one_line()


def test_qrels_ids_are_taken_verbatim(tmp_path):
    """A quote in an id must not start a CSV quoted field that swallows the following rows."""
    corpus = [json.dumps({"_id": '"d1', "text": "alpha"}), json.dumps({"_id": "d2", "text": "beta"})]
    folder = _write_beir(tmp_path / "quotes", corpus=corpus, qrels=['q1\t"d1\t1', "q2\td2\t2"])
    assert _load(folder).qrels == {"q1": {'"d1': 1}, "q2": {"d2": 2}}


def test_invalid_utf8_names_the_line(tmp_path):
    folder = _write_beir(tmp_path / "latin1")
    (folder / "queries.jsonl").write_bytes(b'{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": "caf\xe9"}\n')
    with pytest.raises(DataError) as err:
        _load(folder)
    assert f"{folder / 'queries.jsonl'}:2: not valid UTF-8" in err.value.one_line()


def test_qrels_naming_unknown_pages_is_fatal(tmp_path):
    folder = _write_beir(tmp_path / "unknown", qrels=["q1\td1\t1", "q2\td9\t1"])
    with pytest.raises(DataError, match="qrels unknown page, first: d9"):
        _load(folder)

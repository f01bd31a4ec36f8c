"""The Hub loaders (vidore-raw, mteb, miracl-vision) through the fake Hub, in the upstream layouts."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest

import hub_fixtures as fx
from evals_repro.base.errors import ConfigurationError, DataError, UsageError
from evals_repro.benchmarks import LoadOptions, get_benchmark, load_subset
from evals_repro.benchmarks import hub as hub_access
from evals_repro.benchmarks.declaration import parse_declaration

ROOT = Path(__file__).resolve().parents[1]
HR_UNCACHED_SHA = fx.HR_UNCACHED_SHA
OCR_REPO, OCR_SHA = fx.OCR_REPO, fx.OCR_SHA


@pytest.fixture(scope="session")
def hub(fake_hub):
    return fx.install(fake_hub)


def by_language(subset) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for query in subset.queries:
        out.setdefault(query.language, []).append(query.id)
    return out


def expected_languages() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for qid, _, language in fx.HR_QUERY_ROWS:
        out.setdefault(language, []).append(str(qid))
    return out


def test_vidore_raw_loads_pinned_hr_from_the_hub(hub):
    hub.clear_requests()
    subset = load_subset(get_benchmark("vidore-v3"), "hr")
    assert subset.source["revision"] == fx.HR_EVAL_SHA == subset.source["origin"].split("@")[1]
    assert all(fx.HR_MAIN_SHA not in path for _, path in hub.requests)
    # 5 pages (one with empty markdown, kept and counted), 12 queries = 2 per language, 30 qrels.
    assert [p.id for p in subset.pages] == ["0", "1", "2", "3", "4"]
    assert subset.pages[4].text == "" and subset.source["checks"]["empty_page_text"] == 1
    assert subset.pages[0].text.startswith("Annual leave policy")
    assert subset.pages[3].metadata == {"doc_id": "eu_skills_report", "page_number_in_doc": 0}
    assert all(p.image is None for p in subset.pages)  # markdown runs never hold images
    assert by_language(subset) == expected_languages()
    assert {lang: len(ids) for lang, ids in by_language(subset).items()} == {lang: 2 for lang in fx.LANGUAGES}
    assert sum(len(docs) for docs in subset.qrels.values()) == 30
    assert subset.qrels["7"] == {"3": 2, "4": 1, "1": 1}  # query 7 is French, row 8
    query = {q.id: q for q in subset.queries}
    assert query["7"].language == "french" and query["7"].text == "budget de formation par département"
    assert query["0"].metadata == {
        "query_type": ["extractive", "numerical"],
        "query_format": "question",
        "content_type": ["Text"],
        "relevant_pages": 2,
    }
    assert query["11"].metadata == {
        "query_type": ["open-ended"],
        "query_format": "keyword",
        "content_type": ["Chart", "Table"],
        "relevant_pages": 3,
    }


def test_vidore_images_are_the_encoded_bytes(hub):
    from PIL import Image

    subset = load_subset(get_benchmark("vidore-v3"), "hr", LoadOptions(content="images"))
    for page, spec in zip(subset.pages, fx.HR_PAGES):
        assert page.image == fx.png(spec[4])
        assert Image.open(io.BytesIO(page.image)).getpixel((1, 1)) == spec[4]
    assert subset.pages[4].text == ""


def test_declared_query_languages_restrict_the_queries(hub, tmp_path):
    text = (
        (ROOT / "benchmarks" / "vidore-v3.toml")
        .read_text()
        .replace(
            'query_languages = ["english", "french", "german", "italian", "portuguese", "spanish"]',
            'query_languages = ["english", "french"]',
        )
    )
    path = tmp_path / "two.toml"
    path.write_text(text)
    subset = load_subset(parse_declaration(path), "hr")
    assert by_language(subset) == {"english": ["0", "2"], "french": ["1", "7"]}
    assert sorted(subset.qrels) == ["0", "1", "2", "7"]


def test_revision_override_loads_another_commit(hub):
    subset = load_subset(get_benchmark("vidore-v3"), "hr", LoadOptions(revision=fx.HR_MAIN_SHA))
    assert subset.source["revision"] == fx.HR_MAIN_SHA
    assert len(subset.pages) == 6 and subset.pages[5].text == "Apprenticeship numbers by country."


def test_branch_revision_is_recorded_as_its_commit(hub):
    subset = load_subset(get_benchmark("vidore-v3"), "hr", LoadOptions(revision="main"))
    assert subset.source["revision"] == fx.HR_MAIN_SHA


def test_unknown_revision_is_one_line(hub):
    with pytest.raises(DataError) as caught:
        load_subset(get_benchmark("vidore-v3"), "hr", LoadOptions(revision="f" * 40))
    line = caught.value.one_line()
    assert "\n" not in line and f"revision {'f' * 40} does not exist in dataset {fx.HR_REPO}" in line


def test_unreachable_hub_is_one_line_naming_repo_and_revision(hub, monkeypatch):
    monkeypatch.setattr(hub_access, "_RESOLVED", {})
    hub.stop()
    try:
        with pytest.raises(ConfigurationError) as caught:
            load_subset(get_benchmark("vidore-v3"), "hr")
    finally:
        hub.start()
    line = caught.value.one_line()
    assert "\n" not in line
    assert f"{fx.HR_REPO}@{fx.HR_EVAL_SHA}" in line
    assert "HF_ENDPOINT" in line and "HF_HUB_OFFLINE=1" in line and "network access" in line


@pytest.fixture
def offline_mode(monkeypatch):
    """HF_HUB_OFFLINE=1 as the libraries see it: both read the variable once, at import, into
    these constants (a subprocess with the variable set would spend ~10 s importing datasets)."""
    import datasets
    from huggingface_hub import constants

    assert constants.HF_HUB_OFFLINE is False and hub_access.offline() is False
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)


def test_second_load_offline_makes_no_request(hub, request):
    online = load_subset(get_benchmark("vidore-v3"), "hr")  # downloads (or finds) the pinned files
    load_subset(get_benchmark("vidore-v3"), "hr", LoadOptions(revision=fx.HR_MAIN_SHA))  # cached later
    request.getfixturevalue("offline_mode")
    hub.clear_requests()
    subset = load_subset(get_benchmark("vidore-v3"), "hr")
    assert hub.requests == []
    # The pinned commit, not the most recently cached one (main, with six pages).
    assert subset.source["revision"] == fx.HR_EVAL_SHA and len(subset.pages) == 5
    assert subset.data_digest() == online.data_digest()
    # A commit that was never downloaded is refused, not replaced by a cached one.
    with pytest.raises(ConfigurationError) as caught:
        load_subset(get_benchmark("vidore-v3"), "hr", LoadOptions(revision=HR_UNCACHED_SHA))
    line = caught.value.one_line()
    assert f"{fx.HR_REPO}@{HR_UNCACHED_SHA}" in line and "offline cache" in line and "\n" not in line
    with pytest.raises(ConfigurationError, match="full commit sha"):
        load_subset(get_benchmark("vidore-v3"), "hr", LoadOptions(revision="main"))
    assert hub.requests == []


# -- mteb layout ----------------------------------------------------------------------------
def test_mteb_layout_filters_each_language_qrels_and_loads_the_corpus_once(hub):
    hub.clear_requests()
    subset = load_subset(get_benchmark("vidore-v3-mteb"), "hr", LoadOptions(content="images"))
    assert subset.source["revision"] == fx.HR_MTEB_SHA
    corpus_gets = [p for m, p in hub.requests if m == "GET" and "-corpus/test-" in p]
    assert len(corpus_gets) <= 1 and all("/english-corpus/" in p for p in corpus_gets)
    assert [p.id for p in subset.pages] == [f"corpus-test-{i}" for i in range(5)]
    assert subset.pages[2].image == fx.png(fx.HR_PAGES[2][4]) and subset.pages[2].text == ""
    expected = {lang: [f"query-test-{q}" for q in ids] for lang, ids in expected_languages().items()}
    assert by_language(subset) == expected
    # Each {lang}-qrels file holds all 30 judgments; the subset keeps each exactly once.
    assert sum(len(docs) for docs in subset.qrels.values()) == 30
    assert subset.qrels["query-test-4"] == {"corpus-test-3": 2, "corpus-test-4": 1, "corpus-test-1": 1}
    assert {q.id: q.metadata["relevant_pages"] for q in subset.queries}["query-test-5"] == 2


def test_mteb_layout_without_page_text_refuses_markdown(hub):
    with pytest.raises(UsageError) as caught:
        load_subset(get_benchmark("vidore-v3-mteb"), "hr")
    assert "--content images" in caught.value.one_line()


def test_a_declaration_is_enough_for_a_new_mteb_repo(hub, tmp_path):
    path = tmp_path / "ocr.toml"
    path.write_text(
        textwrap.dedent(f"""
        name = "vidore-hr-ocr"
        loader = "mteb"
        query_languages = ["english", "german"]
        [subsets.hr]
        native_language = "english"
        repo = "{OCR_REPO}"
        revision = "{OCR_SHA}"
    """)
    )
    subset = load_subset(parse_declaration(path), "hr")
    assert [p.text for p in subset.pages] == [p[3] for p in fx.HR_PAGES]
    assert by_language(subset) == {
        "english": ["query-test-0", "query-test-2"],
        "german": ["query-test-4", "query-test-5"],
    }
    assert sorted(subset.qrels) == ["query-test-0", "query-test-2", "query-test-4", "query-test-5"]


# -- MIRACL-VISION ----------------------------------------------------------------------------
def test_miracl_titles_positive_qrels_and_images_joined_by_file_name(hub):
    decl = get_benchmark("miracl-vision")
    assert len(decl.subsets) == 18 and decl.subset("sw").native_language == "sw"
    subset = load_subset(decl, "en", LoadOptions(content="images"))
    assert subset.source["revision"] == fx.MIRACL_SHA and subset.source["split"] == "default"
    assert [(p.id, p.title) for p in subset.pages] == [("0", "Zebra"), ("1", "Horse"), ("2", "Stripe (pattern)")]
    # Score-0 judgments dropped; q3 (judged negative only) dropped with them.
    assert subset.qrels == {"q1": {"0": 1, "2": 1}, "q2": {"1": 1}}
    assert [(q.id, q.language) for q in subset.queries] == [("q1", "en"), ("q2", "en")]
    assert subset.source["queries_without_positive"] == 1
    # images.parquet lists rows in reverse order: the join is by image_id <-> file_name.
    assert [p.image for p in subset.pages] == [fx.expected_image("en", i) for i in ("0", "1", "2")]


def test_miracl_markdown_needs_no_image_file(hub):
    hub.clear_requests()
    subset = load_subset(get_benchmark("miracl-vision"), "sw")
    assert subset.pages[0].title == "Punda milia" and subset.pages[0].image is None
    assert subset.qrels == {"s1": {"0": 1}}
    assert not any("images.parquet" in p for _, p in hub.requests)


def test_repo_missing_from_hub_is_one_line(hub):
    with pytest.raises(DataError) as caught:
        load_subset(get_benchmark("miracl-vision"), "en", LoadOptions(revision=fx.HR_EVAL_SHA))
    assert "revision" in caught.value.one_line() and fx.MIRACL_REPO in caught.value.one_line()

"""One page renderer: the same page reaches the same model as the same input wherever it comes from."""

from __future__ import annotations

import base64

import pytest

import hub_fixtures as fx
from evals_repro.base.data import Page, Query
from evals_repro.base.rendering import ModelInput, PageStyle, page_text, query_text, render_page
from evals_repro.cli import main
from fakes.cohere import FakeCohere
from fakes.rerankers import FakeCohereRerank
from fakes.voyage import FakeVoyage

PAGE = Page("p1", "Body text.", image=b"\x89PNG\r\n\x1a\nfake", title="Heat pumps")


def test_every_style_on_a_page_with_a_title():
    assert page_text(PAGE, PageStyle.PLAIN) == "Heat pumps\n\nBody text."
    assert page_text(PAGE, PageStyle.LABELLED) == "title: Heat pumps\nBody text."
    assert render_page(PAGE, PageStyle.TITLE_FIELD) == ModelInput(text="Body text.", title="Heat pumps")
    assert render_page(PAGE, PageStyle.BODY) == ModelInput(text="Body text.", title="Heat pumps")
    assert render_page(PAGE, PageStyle.IMAGE) == ModelInput(
        text="title: Heat pumps", image=PAGE.image, title="Heat pumps"
    )
    untitled = Page("p2", "Only text.", image=b"img")
    assert page_text(untitled, PageStyle.PLAIN) == page_text(untitled, PageStyle.LABELLED) == "Only text."
    assert render_page(untitled, PageStyle.IMAGE) == ModelInput(image=b"img")


def test_rerankers_read_the_instruction_first_stages_do_not():
    query = Query("q", "lung cancer", "english", instruction="Only documents about treatment are relevant.")
    assert query_text(query) == "lung cancer"
    assert query_text(query, reranker=True) == "lung cancer Only documents about treatment are relevant."


@pytest.fixture(scope="module")
def hub(fake_hub):
    return fx.install(fake_hub)


def run_miracl_images(method: str, tmp_path) -> int:
    return main(
        [
            "run", method, "-b", "miracl-vision", "-s", "en", "--content", "images",
            "--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c"),
        ]
    )  # fmt: skip


def test_miracl_titles_reach_voyage_multimodal_beside_the_image(hub, tmp_path, monkeypatch):
    with FakeVoyage() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "k")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        assert run_miracl_images("voyage-multimodal-3.5", tmp_path) == 0
        documents = [
            item["content"]
            for r in fake.requests
            if r.path.endswith("/multimodalembeddings") and r.json["input_type"] == "document"
            for item in r.json["inputs"]
        ]
    assert len(documents) == 3
    by_title = {parts[0]["text"]: parts[1] for parts in documents}
    assert set(by_title) == {"title: Zebra", "title: Horse", "title: Stripe (pattern)"}
    zebra = by_title["title: Zebra"]["image_base64"]
    assert base64.b64decode(zebra.split(",", 1)[1]) == fx.expected_image("en", "0")


def test_miracl_titles_reach_cohere_image_embeddings(hub, tmp_path, monkeypatch):
    with FakeCohere() as fake:
        monkeypatch.setenv("COHERE_API_KEY", "k")
        monkeypatch.setenv("CO_API_URL", fake.url)
        assert run_miracl_images("cohere-embed-v4.0", tmp_path) == 0
        documents = [
            item["content"]
            for r in fake.requests
            if r.json.get("input_type") == "search_document"
            for item in r.json["inputs"]
        ]
    assert sorted(parts[0]["text"] for parts in documents) == [
        "title: Horse",
        "title: Stripe (pattern)",
        "title: Zebra",
    ]
    assert all(parts[1]["type"] == "image_url" for parts in documents)


def test_the_study_and_run_send_a_reranker_the_same_strings(hub, tmp_path, monkeypatch):
    with FakeCohereRerank() as fake:
        monkeypatch.setenv("COHERE_API_KEY", "k")
        monkeypatch.setenv("CO_API_URL", fake.url)
        common = ["--cache-dir", str(tmp_path / "c")]
        assert main(["run", "bm25+cohere@3", "-b", "miracl-vision", "-s", "en", "--results-dir", str(tmp_path / "r"), *common]) == 0  # fmt: skip
        from_run = {r.json["query"]: sorted(r.json["documents"]) for r in fake.requests if r.path == "/v2/rerank"}
        fake.requests.clear()
        study = ["--study-dir", str(tmp_path / "study"), *common]
        assert main(["rerank-study", "prepare", "-b", "miracl-vision", "-s", "en", *study]) == 0
        assert main(["rerank-study", "quality", "--models", "cohere-pro", *study]) == 0
        from_study = {r.json["query"]: sorted(r.json["documents"]) for r in fake.requests if r.path == "/v2/rerank"}
    assert from_run and from_run == from_study
    assert "Zebra\n\nZebras are African equines with black and white stripes." in from_run["why do zebras have stripes"]

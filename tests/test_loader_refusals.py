"""Loaders refuse what a source cannot serve before downloading it, and judge page content by what a page carries."""

from __future__ import annotations

import textwrap

import pytest

import hub_fixtures as fx
import scripted_method
from evals_repro.base.errors import DataError, UsageError
from evals_repro.base.registry import METHODS
from evals_repro.benchmarks import LoadOptions, get_benchmark, load_subset
from evals_repro.benchmarks.declaration import parse_declaration
from evals_repro.cli import main


@pytest.fixture(scope="session")
def hub(fake_hub):
    return fx.install(fake_hub)


@pytest.fixture
def scripted(monkeypatch, registered):
    registered(METHODS, "scripted", scripted_method.build, contents=("markdown", "images"))
    monkeypatch.setattr(scripted_method, "SCRIPT", {})
    monkeypatch.setattr(scripted_method, "FAIL_ON_SUBSET", set())


def _data_requests(hub) -> list[str]:
    return [path for method, path in hub.requests if method == "GET" and path.endswith(".parquet")]


def test_image_only_mteb_benchmark_is_refused_before_any_request(hub, tmp_path, capsys):
    hub.clear_requests()
    code = main(["run", "bm25", "-b", "vidore-v3-mteb", "-s", "hr", "--results-dir", str(tmp_path / "results")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "vidore-v3-mteb carries page images only" in err and "--content images" in err
    assert hub.requests == []


def test_undeclared_image_only_mteb_repo_is_refused_from_its_card(hub, tmp_path):
    """A declaration without `contents`: the card's corpus columns decide, before any parquet file is fetched."""
    path = tmp_path / "images-only.toml"
    path.write_text(
        textwrap.dedent(f"""
        name = "hr-pages"
        loader = "mteb"
        query_languages = ["english"]
        [subsets.hr]
        native_language = "english"
        repo = "{fx.HR_MTEB_REPO}"
        revision = "{fx.HR_MTEB_SHA}"
    """)
    )
    hub.clear_requests()
    with pytest.raises(UsageError, match="english-corpus has page images but no page text"):
        load_subset(parse_declaration(path), "hr")
    assert _data_requests(hub) == []


def test_bad_contents_field_is_a_data_error(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        'name = "x"\nloader = "beir"\nquery_languages = ["english"]\nnative_language = "english"\ncontents = ["pdf"]\n[subsets.a]\n'
    )
    with pytest.raises(DataError, match="field 'contents'"):
        parse_declaration(path)


def test_markdown_only_sample_refuses_images_at_once(tmp_path, capsys):
    code = main(["run", "bm25", "-b", "sample", "--content", "images", "--results-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "sample carries page text only" in err and "--content markdown" in err
    assert not list((tmp_path / "r").rglob("*.json"))  # refused before any subset ran


def test_image_only_pages_are_not_reported_as_empty_text(hub, scripted, tmp_path, capsys):
    subset = load_subset(get_benchmark("vidore-v3-mteb"), "hr", LoadOptions(content="images"))
    assert all(p.text == "" and p.image for p in subset.pages)
    assert "empty_page_text" not in subset.source["checks"]
    common = ["-b", "vidore-v3-mteb", "-s", "hr", "--results-dir", str(tmp_path / "results")]
    assert main(["run", "scripted", *common, "--content", "images", "--cache-dir", str(tmp_path / "cache")]) == 0
    assert "empty page text" not in capsys.readouterr().err
    # A text run still counts pages whose text is empty (vidore-v3 hr has one).
    assert load_subset(get_benchmark("vidore-v3"), "hr").source["checks"]["empty_page_text"] == 1

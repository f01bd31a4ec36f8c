"""A dataset card's metadata block is found by huggingface_hub's own rule (what `repocard.metadata_load` uses):
the fixture cards read as their YAML says, and cards the Hub reads (a BOM, CRLF, a blank line first) read here too,
as `metadata_load` reads them."""

from __future__ import annotations

import pytest
import yaml

import rcp_fixture
from evals_repro.base.errors import DataError
from evals_repro.benchmarks.hub import card_features, parse_card
from evals_repro.benchmarks.rcp_hub import data_files as _data_files
from hub_fixtures import RAW_README


def card(tmp_path, text: str | bytes):
    """What this harness reads from a card file, beside what huggingface_hub's `metadata_load` reads from it."""
    from huggingface_hub.repocard import metadata_load

    path = tmp_path / "README.md"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    ours = parse_card(path.read_text(encoding="utf-8"), "org/repo@abc/README.md")
    try:
        hubs = metadata_load(path)
    except ValueError:  # a block that is not a mapping: no metadata
        hubs = None
    assert ours == (hubs or None)
    return ours


def test_the_raw_vidore_fixture_card_declares_its_columns(tmp_path):
    text = RAW_README.format(n_pages=3, n_qrels=4, n_queries=2, title="HR")
    got = card(tmp_path, text)
    assert got == yaml.safe_load(text.split("---\n")[1])  # exactly the block between the markers
    assert card_features(got, "corpus") == {"corpus_id", "image", "doc_id", "markdown", "page_number_in_doc"}
    assert card_features(got, "qrels") == {"query_id", "corpus_id", "score", "content_type", "bounding_boxes"}
    assert card_features(got, "no-such-config") is None


def test_the_rcp_fixture_card_names_its_data_files(tmp_path):
    files = rcp_fixture.with_card({"hr__en/queries.parquet": b"", "provenance/runs/hr.parquet": b""})
    text = files["README.md"].decode()
    got = card(tmp_path, text)
    assert got == yaml.safe_load(text.split("---\n")[1])
    assert _data_files(got, "hr__en-queries", "test") == ["hr__en/queries.parquet"]
    assert _data_files(got, "provenance-runs", "hr") == ["provenance/runs/hr.parquet"]


CARD = "license: mit\ndataset_info:\n  features:\n  - name: id\n  - name: text\n"


@pytest.mark.parametrize(
    "text",
    [
        f"---\n{CARD}---\n# Title\n",
        b"\xef\xbb\xbf" + f"---\n{CARD}---\n# Title\n".encode(),  # a BOM, as Windows editors save it
        f"---\r\n{CARD.replace(chr(10), chr(13) + chr(10))}---\r\n# Title\r\n",  # CRLF line ends
        f"\n---\n{CARD}---\n",  # a blank line before the block
        f"---\n{CARD}---",  # the block is the whole file
    ],
    ids=["plain", "bom", "crlf", "blank-line-first", "no-body"],
)
def test_cards_the_hub_reads_are_read_the_same(tmp_path, text):
    got = card(tmp_path, text)
    assert got == {"license": "mit", "dataset_info": {"features": [{"name": "id"}, {"name": "text"}]}}
    assert card_features(got, "default") == {"id", "text"}


@pytest.mark.parametrize(
    "text",
    ["# Only a title\n", "", "---\nlicense: mit\n", "---\n- a\n- b\n---\n", "---\n---\n# empty block\n"],
    ids=["no-block", "empty-file", "unclosed", "a-list", "empty-block"],
)
def test_a_card_without_a_metadata_mapping_has_none(tmp_path, text):
    assert card(tmp_path, text) is None


def test_a_block_that_does_not_parse_is_one_line_naming_the_card():
    with pytest.raises(DataError) as info:
        parse_card("---\nlicense: [mit\n---\n", "org/repo@abc/README.md")
    assert info.value.one_line().startswith("org/repo@abc/README.md: the card's YAML header does not parse (")

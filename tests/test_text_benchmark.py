"""The `text` benchmark: five mteb BEIR copies through the fake Hub, TREC DL 2019/2020 through a
pre-filled ir_datasets cache, and `run bm25 --benchmark text` end to end with hand-computed metrics.

Hand computations (BM25 ranks documents that share the same query terms at tf 1 by length, shorter
first; nDCG is trec_eval's: linear gain = grade, discount log2(rank + 1)):

- scifact q1 "iron deficiency": 102 holds both terms, 101 (relevant) only "deficiency" -> relevant at
  rank 2: nDCG@10 = (1/log2 3) / 1 = 0.630930. q2: the only relevant document first: 1. q3: 104
  first, 103 (also relevant) matches no term: 1 / (1 + 1/log2 3) = 0.613147. Mean 0.748026;
  recall@100 (1 + 1 + 1/2) / 3 = 0.833333.
- fiqa q8 "index funds cost": corpus document 8 (the query's own id, every term twice) ranks first and
  31 (relevant) second; mteb's FiQA2018 sets ignore_identical_ids, so 8 is dropped and 31 is at rank 1:
  nDCG@10 1 (without the rule 1/log2 3 = 0.630930). q9: 32 first: 1. Mean 1.0 (0.815465 without).
- dl19 q1001: passages 0 (8 words, grade 1) and 1 (13 words, grade 3) hold all three terms, so 0 ranks
  first: (1 + 3/log2 3) / (3 + 1/log2 3) = 0.796707. q1002: the grade-2 passage (4 words) before the
  grade-0 one (6 words): 1. Mean 0.898353. dl20 q2001: its grade-2 passage alone matches: 1.
  MAP at relevance level 2 (TREC DL's): q1001 (0.5), q1002 (1): 0.75.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import text_fixtures as tfx
from evals_repro.base.data import Page, Subset
from evals_repro.base.errors import DataError
from evals_repro.base.pagestore import PageStore
from evals_repro.benchmarks import LoadOptions, get_benchmark, load_subset
from evals_repro.cli import main
from evals_repro.records.runs import read_saved_run

LOG2_3 = math.log2(3)
SCIFACT_NDCG10 = ((1 / LOG2_3) + 1 + 1 / (1 + 1 / LOG2_3)) / 3
SCIFACT_RECALL100 = (1 + 1 + 0.5) / 3
DL19_NDCG10 = ((1 + 3 / LOG2_3) / (3 + 1 / LOG2_3) + 1) / 2


@pytest.fixture(scope="session")
def text_data(fake_hub, irds_home):
    tfx.install(fake_hub)
    return irds_home


def load(name: str, tmp_path: Path):
    return load_subset(get_benchmark("text"), name, LoadOptions(cache_dir=tmp_path / "cache"))


def test_declaration_is_english_only_and_pinned():
    decl = get_benchmark("text")
    assert decl.query_languages == ["english"]
    assert {s.native_language for s in decl.subsets} == {"english"}
    assert decl.subset_names == ["fiqa", "trec-covid", "hotpotqa", "nq", "scifact", "dl19", "dl20"]
    for subset in decl.subsets:
        source = decl.subset_source(subset.name)
        assert set(source["counts"]) == {"queries", "docs", "judged"}
        if subset.name.startswith("dl"):
            assert source["loader"] == "ir-datasets" and source["dataset"].endswith("/judged")
        else:
            assert source["repo"].startswith("mteb/") and len(source["revision"]) == 40
    assert decl.subset_source("dl19")["counts"]["docs"] == decl.subset_source("dl20")["counts"]["docs"] == 8_841_823


def test_scifact_text_is_title_and_body_and_only_test_queries(text_data, tmp_path, caplog):
    subset = load("scifact", tmp_path)
    assert isinstance(subset.pages, PageStore)
    texts = {page.id: page.text for page in subset.pages}
    assert texts == {
        "101": "Vitamin D Vitamin D deficiency in winter.",
        "102": "Deficiency of iron causes anaemia in children and adults alike.",  # empty title: no leading space
        "103": "Sleep Sleep quality and memory consolidation.",
        "104": "Exercise Exercise lowers blood pressure.",
    }
    assert [q.id for q in subset.queries] == ["1", "2", "3"]  # the train query 4 is not loaded
    assert subset.qrels == {"1": {"101": 1}, "2": {"103": 1}, "3": {"104": 1, "103": 1}}
    repo, sha = tfx.pinned()["scifact"]
    assert subset.source["repo"] == repo and subset.source["revision"] == sha
    counts = subset.source["counts"]
    assert counts["loaded"] == {"queries": 3, "docs": 4, "judged": 4}
    assert counts["published"] == {"queries": 300, "docs": 5183, "judged": 339} and counts["match"] is False
    warning = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and r.name.startswith("evals_repro")]
    assert len(warning) == 1 and "text/scifact" in warning[0] and "docs 4 (published 5,183)" in warning[0]


def test_trec_covid_float_grades_and_minus_one_is_not_relevant(text_data, tmp_path):
    subset = load("trec-covid", tmp_path)
    assert subset.qrels == {
        "1": {"ug7v899j": 2, "02tnwd4m": 0},
        "2": {"02tnwd4m": 1, "ejv2xln0": 0},
        "3": {"ejv2xln0": 0},
    }
    assert all(type(g) is int for docs in subset.qrels.values() for g in docs.values())
    assert subset.source["counts"]["negative_grades_as_non_relevant"] == 2
    assert subset.source["checks"]["queries_without_positive_qrel"] == 1  # query 3: scored by nobody


def test_fiqa_without_titles_keeps_empty_documents(text_data, tmp_path):
    subset = load("fiqa", tmp_path)
    assert [q.id for q in subset.queries] == ["8", "9"]
    assert subset.page_by_id()["31"].text == "Index funds track a market index at low cost."
    assert subset.source["checks"]["empty_page_text"] == 1


def test_dl19_and_dl20_share_one_stored_corpus(text_data, tmp_path):
    dl19, dl20 = load("dl19", tmp_path), load("dl20", tmp_path)
    assert dl19.pages is dl20.pages and isinstance(dl19.pages, PageStore)
    assert len(list((tmp_path / "cache" / "pages").iterdir())) == 1
    assert [q.id for q in dl19.queries] == ["1001", "1002"]  # /judged: 1003 has no qrels
    assert [q.id for q in dl20.queries] == ["2001"]
    assert dl19.qrels == {"1001": {"0": 1, "1": 3}, "1002": {"2": 0, "3": 2}}
    assert dl20.queries[0].text == "tea water"  # read through gunzip from queries.tsv.gz
    # The store's fingerprint is the one a list of the same pages gives: the BM25 key is shared.
    as_list = Subset("text", "x", "english", [Page(str(i), t) for i, t in enumerate(tfx.COLLECTION)], [], {})
    assert dl19.fingerprint() == dl20.fingerprint() == as_list.fingerprint()
    assert dl19.source["counts"]["loaded"] == {"queries": 2, "docs": 5, "judged": 4}
    assert dl19.source["dataset"] == "msmarco-passage/trec-dl-2019/judged"


def test_ir_datasets_version_trap_is_refused_before_any_deletion(tmp_path, monkeypatch):
    from evals_repro.benchmarks import irds

    home = tmp_path / "irds"
    (home / "msmarco-passage").mkdir(parents=True)
    collection = home / "msmarco-passage" / "collection.tsv"
    collection.write_text("0\tpassage\n")
    monkeypatch.setattr(irds, "_home", lambda: home)
    guard = get_benchmark("text").subset_source("dl19")["version_guard"]
    with pytest.raises(DataError) as error:
        irds._check_version_guard(guard, "text/dl19")
    assert "irds_version.txt is missing" in error.value.one_line() and "'v2'" in error.value.one_line()
    (home / "msmarco-passage" / "irds_version.txt").write_text("v1")
    with pytest.raises(DataError, match="holds 'v1'"):
        irds._check_version_guard(guard, "text/dl19")
    (home / "msmarco-passage" / "irds_version.txt").write_text("v2")
    irds._check_version_guard(guard, "text/dl19")
    assert collection.exists()


def test_revision_override_is_refused_for_ir_datasets_subsets(text_data, tmp_path):
    from evals_repro.base.errors import UsageError

    with pytest.raises(UsageError, match="uv.lock"):
        load_subset(get_benchmark("text"), "dl19", LoadOptions(revision="main", cache_dir=tmp_path))


def test_run_bm25_on_text_end_to_end_with_hand_computed_metrics(text_data, tmp_path, capsys):
    results = tmp_path / "results"
    args = ["--results-dir", str(results), "--cache-dir", str(tmp_path / "cache")]
    assert main(["run", "bm25", "--benchmark", "text", *args]) == 0
    err = capsys.readouterr().err
    assert sum(line.startswith("warning:") for line in err.splitlines()) == 7  # fixture counts differ from published
    written = {path.stem: json.loads(path.read_text()) for path in (results / "text" / "bm25").glob("*.json")}
    assert sorted(written) == sorted(get_benchmark("text").subset_names)
    for result in written.values():
        assert result["setting"] == "monolingual" and list(result["languages"]) == ["english"]

    scifact = written["scifact"]["metrics"]
    assert scifact["ndcg_at_10"] == pytest.approx(SCIFACT_NDCG10, abs=1e-6)
    assert scifact["recall_at_100"] == pytest.approx(SCIFACT_RECALL100, abs=1e-6)
    assert written["scifact"]["per_query"]["1"]["metrics"]["ndcg_at_10"] == pytest.approx(1 / LOG2_3, abs=1e-6)
    assert written["dl19"]["metrics"]["ndcg_at_10"] == pytest.approx(DL19_NDCG10, abs=1e-6)
    assert written["dl20"]["metrics"]["ndcg_at_10"] == pytest.approx(1.0)
    # TREC DL's binary measures count grade >= 2 (trec_eval -l 2): q1001's grade-1 passage 0 at rank 1 is
    # not relevant, its grade-3 passage at rank 2 is (AP 1/2); q1002's grade-2 passage is first (AP 1).
    assert written["dl19"]["protocol"]["relevance_level"] == 2
    assert written["dl19"]["metrics"]["map"] == pytest.approx((0.5 + 1) / 2)
    assert written["scifact"]["protocol"]["relevance_level"] == 1
    # mteb's ignore_identical_ids, per task at the pinned mteb commit: FiQA2018 sets it, the others do not.
    fiqa = written["fiqa"]
    assert fiqa["protocol"]["ignore_identical_ids"] is True
    saved = read_saved_run(results / "text" / "bm25" / fiqa["run"]["path"])["8"]
    assert sorted(saved, key=saved.__getitem__, reverse=True)[:2] == ["8", "31"]  # the run keeps it; scoring drops it
    assert fiqa["per_query"]["8"]["metrics"]["ndcg_at_10"] == 1.0
    assert fiqa["metrics"]["ndcg_at_10"] == 1.0  # without the rule: (1/log2 3 + 1) / 2 = 0.815465
    assert [name for name, r in written.items() if r["protocol"]["ignore_identical_ids"]] == ["fiqa"]
    # Query 3 is judged (grade 0 and -1 only): every judged query counts, so it scores 0 and stays in.
    covid = written["trec-covid"]
    assert covid["n_queries"] == 3 and covid["skipped_queries"] == []
    assert covid["per_query"]["3"]["metrics"]["ndcg_at_10"] == 0.0
    # One index for the one MS MARCO collection, and the loaded/published counts in every result.
    keys = {name: written[name]["config"]["retriever"]["index_key"] for name in ("dl19", "dl20")}
    assert keys["dl19"] == keys["dl20"]
    assert len(list((tmp_path / "cache" / "bm25").iterdir())) == 6  # five BEIR corpora + MS MARCO
    assert written["dl20"]["source"]["counts"]["published"]["docs"] == 8_841_823

    assert main(["report", "--benchmark", "text", "--results-dir", str(results)]) == 0
    out = capsys.readouterr().out
    assert "| bm25 |" in out


def test_a_reranker_reads_its_candidates_from_the_stored_corpus(text_data, tmp_path):
    """bm25 + the offline MiniLM reranker on dl19: the reranker gets page texts by id from the store."""
    from evals_repro.rerankers import pipeline

    seen: list[str] = []
    original = pipeline.page_text

    def spy(page, style):
        seen.append(page.id)
        return original(page, style)

    args = ["--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "page_text", spy)
        assert main(["run", "bm25+minilm@2", "--benchmark", "text", "--subsets", "dl19", *args]) == 0
    result = json.loads((tmp_path / "results" / "text" / "bm25+minilm@2" / "dl19.json").read_text())
    assert result["n_queries"] == 2 and result["reranked"] is True
    assert sorted(seen) == ["0", "1", "2", "3"]  # the top 2 of each query, fetched by id


def test_judgments_must_be_whole_grades_and_agree():
    from evals_repro.benchmarks.textsets import check_counts, read_judgments

    qrels, facts = read_judgments([("q", "a", 2.0), ("q", "b", -1.0), ("q", "a", 2)], "where")
    assert qrels == {"q": {"a": 2, "b": 0}} and facts == {"judged_rows": 3, "negative_grades": 1}
    with pytest.raises(DataError, match="grade 0.5 .* not a whole number"):
        read_judgments([("q", "a", 0.5)], "where")
    with pytest.raises(DataError, match="judged twice with different grades"):
        read_judgments([("q", "a", 1.0), ("q", "a", 2.0)], "where")
    with pytest.raises(DataError, match="0 judged queries"):
        check_counts("text/x", {"queries": 1}, {"queries": 0, "docs": 3, "judged": 0})
    same = check_counts("text/x", {"queries": 1, "docs": 3, "judged": 2}, {"queries": 1, "docs": 3, "judged": 2})
    assert same["match"] is True

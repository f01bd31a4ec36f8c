"""The study's Hub datasets through their real loaders and the fake Hub: FinanceBench, Legal RAG
Bench, CUREv1, FreshStack, FollowIR; `run` and `report` on each; hand-computed alpha-nDCG@10,
coverage@20 and p-MRR in a run and in the study (scripted reranker over BM25 candidates)."""

from __future__ import annotations

import csv
import json
import math

import pytest

import scripted_method
import study_fixtures as sfx
from evals_repro.base.errors import ConfigurationError, DataError, UsageError
from evals_repro.base.registry import RERANKERS
from evals_repro.benchmarks import LoadOptions, get_benchmark, load_subset
from evals_repro.benchmarks.declaration import parse_declaration
from evals_repro.cli import main
from evals_repro.study.prepare import PrepareRequest, prepare
from evals_repro.study.quality import QualityRequest, run_quality
from evals_repro.study.report import write_report

LOG2 = math.log2
QUIET = lambda _line: None  # noqa: E731
LC = sfx.LC


@pytest.fixture(scope="session")
def hub(fake_hub):
    return sfx.install(fake_hub)


def said(caplog) -> str:
    """The library's warnings since the last call, as the CLI prints them (the log records, whatever the
    order tests run in: a library call alone configures no console)."""
    text = "".join(f"warning: {r.getMessage()}\n" for r in caplog.records if r.levelname == "WARNING")
    caplog.clear()
    return text


def load(name: str, subset: str, **options):
    return load_subset(get_benchmark(name), subset, LoadOptions(**options))


# -- loaders ----------------------------------------------------------------------------------------
def test_financebench_layout_and_count_warning(hub, caplog):
    subset = load("financebench", "financebench")
    assert [q.id for q in subset.queries] == ["00000", "00001", "00002", "00003"]
    assert subset.qrels["00002"] == {"000000002": 1} == subset.qrels["00003"]  # two questions, one document
    assert subset.pages[0].text.startswith("Revenue for fiscal 2022") and subset.pages[0].title is None
    # The copy mteb 2.26.x's FinanceBenchRetrieval loads, at the revision it pins (mteb 2.26.24
    # tasks/retrieval/eng/finance_bench_retrieval.py), read through mteb's push layout (configs corpus,
    # queries, qrels; split test).
    assert subset.source["repo"] == "mteb/FinanceBenchRetrieval"
    assert subset.source["revision"] == "c5215673492044833ff5e0dfd9b5fa848d5df0f2"
    assert sorted(subset.source["configs"]) == ["corpus", "qrels", "queries"]
    counts = subset.source["counts"]
    assert counts["loaded"] == {"queries": 4, "docs": 3, "judged": 4}
    assert counts["published"] == {"queries": 150, "docs": 145, "judged": 150} and counts["match"] is False
    err = said(caplog)
    assert err.count("warning: financebench/financebench") == 1 and "queries 4 (published 150)" in err


def test_legalragbench_unpinned_is_said_and_revision_pins_it(hub, caplog):
    subset = load("legalragbench", "legalragbench")
    sha = sfx.UNPINNED_SHA["isaacus/legal-rag-bench"]
    assert subset.source["revision"] == sha
    err = said(caplog)
    assert "isaacus/legal-rag-bench is not pinned" in err and f"--revision {sha}" in err
    assert {p.id: p.title for p in subset.pages}["p-0004"] == "Self-defence"
    assert subset.pages[0].text.startswith("## Elements\n\nThe prosecution")  # Markdown kept as is
    assert subset.qrels == {"q1": {"p-0001": 1}, "q2": {"p-0002": 1}, "q3": {"p-0004": 1}}
    pinned = load("legalragbench", "legalragbench", revision=sha)
    assert pinned.source["revision"] == sha and "not pinned" not in said(caplog)


def test_cure_specialties_are_subsets_with_english_queries_only(hub):
    decl = get_benchmark("cure")
    assert decl.subset_names == sfx.SPECIALTIES
    subset = load("cure", "dermatology")
    assert [q.text for q in subset.queries] == [
        "dermatology treatment outcomes in adults",
        "dermatology screening in children",
    ]
    assert (
        subset.pages[0].text == "Dermatology study 0 Outcomes of treatment in adults. dermatology-d0"
    )  # title + " " + text
    assert subset.qrels["dermatology-q0"] == {"dermatology-d0": 2, "dermatology-d2": 1}


def test_freshstack_nuggets_belong_to_their_row_not_an_id_prefix(hub):
    subset = load("freshstack", "langchain")
    query = {q.id: q for q in subset.queries}
    assert query["78000001"].text == "How do I stream tokens from a chat model callback?"
    # 7800000 prefixes 78000001: FreshStack's prefix rule would hand it 78000001's nuggets
    assert subset.subtopics["7800000"] == {"7800000_0": {LC["F"]: 1}}
    assert set(subset.subtopics["78000001"]) == {"78000001_0", "78000001_1", "78000001_2", "78000001_3"}
    assert subset.subtopics["78000001"]["78000001_0"] == {LC["A"]: 1, LC["B"]: 1, LC["E"]: 0}
    # a document's grade is the number of the query's nuggets it supports (0 if only judged not)
    assert subset.qrels["78000001"][LC["A"]] == 1 and subset.qrels["78000001"][LC["E"]] == 0
    assert subset.qrels["78000002"] == {LC["E"]: 1, LC["F"]: 0}


def test_freshstack_relevant_and_non_relevant_for_one_nugget_is_non_relevant(hub):
    # FreshStack's DataLoader (fresh-stack/freshstack, datasets/data_loader.py) writes each relevant id as 1,
    # then each non-relevant id as 0 into the same nugget's qrels: the last write wins.
    subset = load("freshstack", "yolo")
    qid, guide, main_py = "49000001", "yolo/docs/guide.md_0_100", "yolo/src/main.py_0_200"
    assert subset.subtopics[qid] == {f"{qid}_0": {main_py: 1}, f"{qid}_1": {guide: 0}}
    assert subset.qrels[qid] == {main_py: 1, guide: 0}  # judged, supports no nugget


def test_freshstack_revision_override_for_both_repos(hub):
    q, c = sfx.UNPINNED_SHA["freshstack/queries-oct-2024"], sfx.UNPINNED_SHA["freshstack/corpus-oct-2024"]
    subset = load("freshstack", "yolo", revision=f"queries={q},corpus={c}")
    assert (subset.source["revision"], subset.source["corpus_revision"]) == (q, c)
    with pytest.raises(UsageError, match="queries=SHA,corpus=SHA"):
        load("freshstack", "yolo", revision="corpus=")


def test_followir_variants_instructions_and_changed_docs(hub):
    subset = load("followir", "robust04")
    query = {q.id: q for q in subset.queries}
    assert set(query) == {"305-og", "305-changed", "310-og", "310-changed"}
    og, changed = query["305-og"], query["305-changed"]
    assert og.text == changed.text == "most dangerous vehicles"
    assert og.instruction != changed.instruction
    assert changed.reranker_text == "most dangerous vehicles " + sfx.ROBUST_PAIRS["305"][2]
    assert og.metadata == {"pair": "305", "variant": "og"}
    assert subset.changed_docs == {"305": ["FBIS3-2_0"], "310": ["FBIS3-4_0", "FBIS3-9_0"]}
    assert subset.qrels["305-changed"]["FBIS3-2_0"] == 0 and subset.qrels["305-og"]["FBIS3-2_0"] == 2


def test_a_gated_repo_stops_with_one_line_naming_the_licence_page_and_hf_token(hub, tmp_path, monkeypatch):
    hub.add_repo("fixture/gated-retrieval", "9a7ed" + "0" * 35, sfx.financebench_files(), gated="manual")
    folder = tmp_path / "decls"
    folder.mkdir()
    (folder / "gated.toml").write_text(
        'name = "gated"\nloader = "hub-retrieval"\nquery_languages = ["english"]\nnative_language = "english"\n'
        f'subsets = ["one"]\n[source]\nrepo = "fixture/gated-retrieval"\nrevision = "{"9a7ed" + "0" * 35}"\n'
        'corpus = { split = "test" }\nqueries = { split = "test" }\nqrels = { config = "qrels" }\n'
    )
    monkeypatch.setenv("EVALS_REPRO_BENCHMARKS", str(folder))
    hub.clear_requests()
    with pytest.raises(ConfigurationError) as raised:
        load("gated", "one")
    assert "fixture/gated-retrieval is gated" in raised.value.one_line() and "HF_TOKEN" in raised.value.one_line()
    assert not [p for _, p in hub.requests if "/resolve/" in p]  # stopped at the probe, before any file
    # a declaration that knows its source is gated stops before any request at all
    text = (
        (folder / "gated.toml")
        .read_text()
        .replace(
            "[source]\n",
            '[source]\ngated = true\nlicence = "CC BY-NC 4.0"\nlicence_page = "https://example.org/terms"\n',
        )
    )
    (folder / "gated.toml").write_text(text)
    hub.clear_requests()
    with pytest.raises(
        ConfigurationError, match=r"gated \(CC BY-NC 4.0\): accept its terms at https://example.org/terms"
    ):
        load("gated", "one")
    assert hub.requests == []
    code = main(["rerank-study", "prepare", "--benchmark", "gated", "--study-dir", str(tmp_path / "s")])
    assert code == 2 and not (tmp_path / "s" / "manifest.json").exists()


def test_a_declared_revision_must_be_a_sha_unless_marked_unpinned(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(
        'name = "x"\nloader = "hub-retrieval"\nquery_languages = ["english"]\nnative_language = "english"\n'
        'subsets = ["a"]\n[source]\nrepo = "o/x"\nrevision = "main"\n'
    )
    with pytest.raises(DataError, match="not a commit sha"):
        load_subset(parse_declaration(path), "a")


# -- run and report on every study dataset -------------------------------------------------------
@pytest.mark.parametrize("benchmark", ["financebench", "legalragbench", "cure", "freshstack", "followir"])
def test_run_bm25_and_report_on_each(benchmark, hub, tmp_path, capsys):
    results = tmp_path / "results"
    args = ["--results-dir", str(results)]
    assert main(["run", "bm25", "--benchmark", benchmark, "--cache-dir", str(tmp_path / "cache"), *args]) == 0
    decl = get_benchmark(benchmark)
    for name in decl.subset_names:
        result = json.loads((results / benchmark / "bm25" / f"{name}.json").read_text())
        assert result["setting"] == "monolingual" and list(result["languages"]) == ["english"]
        assert result["source"]["counts"]["published"]
        if benchmark == "freshstack":
            assert {"alpha_ndcg_at_10", "nugget_coverage_at_20"} <= set(result["metrics"])
        if benchmark == "followir":  # BM25 ignores instructions: both variants rank alike
            assert result["metrics"]["p_mrr"] == 0.0 and set(result["variants"]) == {"og", "changed"}
    capsys.readouterr()
    assert main(["report", "--benchmark", benchmark, *args]) == 0
    out = capsys.readouterr().out
    assert f"{benchmark} — monolingual — ndcg_at_10" in out and "| bm25 |" in out


# -- hand-computed values through `run` and through the study --------------------------------------
# Reranker scripts: query (as the reranker reads it) -> page -> score. FreshStack langchain:
FS_Q1 = "How do I stream tokens from a chat model callback?"
FS_SCRIPT = {
    FS_Q1: {LC[k]: float(6 - i) for i, k in enumerate("ABCEDF")},  # A B C E D F
    "Stream output to a file": {LC[k]: float(6 - i) for i, k in enumerate("EABCDF")},
    "Stream runnables in sequence": {LC[k]: float(6 - i) for i, k in enumerate("FABCDE")},
}
ALPHA_Q1 = (1 + 0.5 / LOG2(3) + 1 / LOG2(4) + 1 / LOG2(6)) / (
    1 + 1 / LOG2(3) + 1 / LOG2(4) + 1 / LOG2(5) + 0.5 / LOG2(6)
)
ALPHA_LANGCHAIN = (ALPHA_Q1 + 1 + 1) / 3  # q2 and q3 put their only nugget's document first
COVERAGE_LANGCHAIN = (3 / 4 + 1 + 1) / 3  # q1's fourth nugget is only in G, which BM25 never retrieves


def robust_script() -> dict[str, dict[str, float]]:
    def ranking(order: str) -> dict[str, float]:
        return {sfx.ROBUST_DOCS[f"D{k}"][0]: float(5 - i) for i, k in enumerate(order)}

    text = {p: spec[0] for p, spec in sfx.ROBUST_PAIRS.items()}
    return {
        f"{text['305']} {sfx.ROBUST_PAIRS['305'][1]}": ranking("21345"),  # og: D2 rank 1
        f"{text['305']} {sfx.ROBUST_PAIRS['305'][2]}": ranking("13425"),  # changed: D2 rank 4
        f"{text['310']} {sfx.ROBUST_PAIRS['310'][1]}": ranking("54123"),  # og: D4 rank 2
        f"{text['310']} {sfx.ROBUST_PAIRS['310'][2]}": ranking("45123"),  # changed: D4 rank 1
    }


# 305: D2 1 -> 4: 1 - 1/4. 310: D4 2 -> 1: 1/2 - 1; D9 never retrieved: 101 -> 101: 0.
P_MRR_ROBUST = ((1 - 1 / 4) + ((1 / 2 - 1) + 0.0) / 2) / 2
# og: 305 ranks D2 (2), D1 (1) first: ideal. 310 ranks D5, D4 (1 each); D9 (1) is missing.
NDCG_OG = (1.0 + (1 + 1 / LOG2(3)) / (1 + 1 / LOG2(3) + 1 / LOG2(4))) / 2
# changed: 305 ranks D1 (1) first: ideal. 310 ranks D5 (its only relevant) second.
NDCG_CHANGED = (1.0 + 1 / LOG2(3)) / 2


@pytest.fixture
def scripted_reranker(monkeypatch, registered):
    registered(RERANKERS, "scripted", scripted_method.build_reranker, description="test reranker")
    monkeypatch.setattr(scripted_method, "RERANK_SCRIPT", {**FS_SCRIPT, **robust_script()})
    monkeypatch.setattr(scripted_method, "RERANK_CALLS", [])
    return scripted_method


def test_run_reranked_by_hand_alpha_coverage_and_p_mrr(hub, scripted_reranker, tmp_path):
    results, cache = tmp_path / "results", tmp_path / "cache"
    common = ["--results-dir", str(results), "--cache-dir", str(cache), "--rerank", "scripted", "--rerank-depth", "100"]
    assert main(["run", "bm25", "--benchmark", "freshstack", "--subsets", "langchain", *common]) == 0
    result = json.loads((results / "freshstack" / "bm25+scripted@100" / "langchain.json").read_text())
    assert result["metrics"]["alpha_ndcg_at_10"] == pytest.approx(ALPHA_LANGCHAIN, abs=1e-4)
    assert result["metrics"]["nugget_coverage_at_20"] == pytest.approx(COVERAGE_LANGCHAIN)

    assert main(["run", "bm25", "--benchmark", "followir", "--subsets", "robust04", *common]) == 0
    result = json.loads((results / "followir" / "bm25+scripted@100" / "robust04.json").read_text())
    assert result["metrics"]["p_mrr"] == pytest.approx(P_MRR_ROBUST)
    assert result["variants"]["og"]["metrics"]["ndcg_at_10"] == pytest.approx(NDCG_OG)
    assert result["variants"]["changed"]["metrics"]["ndcg_at_10"] == pytest.approx(NDCG_CHANGED)
    # the reranker read query + instruction; both variants reranked the same candidates
    calls = {query: ids for query, ids in scripted_reranker.RERANK_CALLS if "vehicles" in query}
    assert set(calls) == set(robust_script())
    og, changed = (f"most dangerous vehicles {sfx.ROBUST_PAIRS['305'][i]}" for i in (1, 2))
    assert sorted(calls[og]) == sorted(calls[changed]) and "FBIS3-9_0" not in calls[og]


def test_study_prepare_quality_report_by_hand(hub, scripted_reranker, tmp_path):
    study, cache = tmp_path / "study", tmp_path / "cache"
    for bench, subset in (("freshstack", "langchain"), ("followir", "robust04")):
        prepare(PrepareRequest(benchmarks=[bench], subsets=[subset], study_dir=study, cache_dir=cache), echo=QUIET)
    manifest = json.loads((study / "manifest.json").read_text())
    assert manifest["datasets"]["followir/robust04"]["study"]["measure"] == "ndcg_at_10[og]"
    rows = {r["query_id"]: r for r in map(json.loads, (study / "candidates/followir/robust04.jsonl").open())}
    assert rows["305-og"]["ids"] == rows["305-changed"]["ids"]  # one retrieval for both variants
    assert rows["305-changed"]["query"].endswith(sfx.ROBUST_PAIRS["305"][2])
    assert rows["310-og"]["extra"]["changed_docs"] == ["FBIS3-4_0", "FBIS3-9_0"]
    counts = run_quality(QualityRequest(study_dir=study, models=["scripted:v1"], cache_dir=cache), echo=QUIET)
    assert counts == {"sent": 7, "failed": 0, "reused": 0}
    paths = write_report(study, resamples=50)
    table = {(r["dataset"], r["subset"], r["metric"]): r for r in csv.DictReader(paths["quality"].open())}
    cell = lambda bench, subset, metric: float(table[(bench, subset, metric)]["scripted:v1"])  # noqa: E731
    assert cell("freshstack", "langchain", "alpha_ndcg_at_10") == pytest.approx(100 * ALPHA_LANGCHAIN, abs=0.05)
    assert cell("freshstack", "langchain", "nugget_coverage_at_20") == pytest.approx(100 * COVERAGE_LANGCHAIN, abs=0.05)
    assert cell("followir", "robust04", "p_mrr") == pytest.approx(100 * P_MRR_ROBUST, abs=0.05)
    assert cell("followir", "robust04", "ndcg_at_10[og]") == pytest.approx(100 * NDCG_OG, abs=0.05)
    assert cell("followir", "robust04", "ndcg_at_10[changed]") == pytest.approx(100 * NDCG_CHANGED, abs=0.05)
    assert table[("followir", "robust04", "p_mrr")]["baseline"] == "0.0"  # BM25 ranks both variants alike
    report = paths["report"].read_text()
    overall = next(line for line in report.splitlines() if line.startswith("| scripted:v1 |"))
    expected = (100 * ALPHA_LANGCHAIN + 100 * NDCG_OG) / 2  # two groups, each on its headline measure
    assert float(overall.split("|")[-2].strip(" *")) == pytest.approx(expected, abs=0.06)  # bold when the best
    assert "freshstack: alpha_ndcg_at_10" in report and "followir: ndcg_at_10[og]" in report

"""`run` and `report` on vidore-v3-rcp through the fake Hub: RCP-nDCG@10 under both tie rules, the
judged pools, --resume across tie rules, and the native / 6-language mean views, all checked by hand."""

from __future__ import annotations

import csv
import functools
import json
import math

import pytest

import rcp_fixture
import scripted_method
from evals_repro.base.registry import METHODS, RERANKERS
from evals_repro.benchmarks import get_benchmark
from evals_repro.benchmarks.rcp_release import REPO
from evals_repro.cli import main
from evals_repro.reporting.report import declared_report
from records import write_rcp_grid

SHA = "7e57" * 10  # a commit of the fixture release only this module uses (reached by sha, not a branch)
L = math.log2(3)
OTHER_HR = ("german", "italian", "portuguese", "spanish")

# Reranker scores per query text (see rcp_fixture.QRELS for the gains).
RERANK = {
    "What is the leave policy?": {"h1": 0.2, "h2": 0.8, "h3": 0.2},  # h2, then h1 and h3 tied
    "Quelle est la politique de congé ?": {"h1": 0.5, "h2": 0.5, "h3": 0.5},  # all tied
    "Which plant produced most?": {"e1": 0.9, "e2": 0.1, "e3": 0.5},  # no tie
    "Quelle centrale a le plus produit ?": {"e1": 0.5, "e2": 0.5, "e3": 0.9},  # e3, then e1 and e2 tied
    **{f"hr question ({lang})": {"h1": 0.9, "h2": 0.5, "h3": 0.1} for lang in OTHER_HR},  # ideal order
}

# RCP-nDCG@10 by hand, (group-mean, doc-id). Ideal DCGs take every gain of the query.
IDEAL_HR_EN = 0.9 + 0.5 / L + 0.1 / 2
IDEAL_HR_FR = 0.6 + 0.3 / L + 0.3 / 2
IDEAL_EN_EN = 0.7 + 0.2 / L + 0.05 / 2
IDEAL_EN_FR = 0.8 + 0.4 / L + 0.1 / 2
HR_EN = (
    (0.5 + 0.5 * (1 / L + 1 / 2)) / IDEAL_HR_EN,  # tie {h1 .9, h3 .1} at ranks 2-3: mean .5 each
    (0.5 + 0.1 / L + 0.9 / 2) / IDEAL_HR_EN,
)  # doc-id: h3 before h1
HR_FR = (
    0.4 * (1 + 1 / L + 1 / 2) / IDEAL_HR_FR,  # all three tied: mean (.3+.6+.3)/3 = .4 each
    (0.3 + 0.6 / L + 0.3 / 2) / IDEAL_HR_FR,
)  # doc-id: h3, h2, h1
EN_EN = ((0.7 + 0.05 / L + 0.2 / 2) / IDEAL_EN_EN,) * 2  # e1, e3, e2
EN_FR = (
    (0.4 + 0.45 * (1 / L + 1 / 2)) / IDEAL_EN_FR,  # e3, then tie {e1 .1, e2 .8}: mean .45
    (0.4 + 0.8 / L + 0.1 / 2) / IDEAL_EN_FR,
)  # doc-id: e2 before e1
# Integer nDCG@10 (trec_eval linear gains, doc-id ties). hr-en-1: h1 (grade 2) at rank 3, h4 (grade 1)
# is outside the pool, so never ranked but in the ideal: 1 / (2 + 1/log2 3). hr-fr-1: h2 at rank 2.
NDCG_HR_EN = (2 / 2) / (2 + 1 / L)
NDCG_HR_FR = 1 / L


def _extra_hr_subsets(files: dict[str, bytes]) -> None:
    """hr in the four other languages: a pooled query ranked ideally, and a judged query without a pool."""
    for lang in OTHER_HR:
        subset, code = f"hr__{lang}", lang[:2]
        files[f"{subset}/queries.parquet"] = rcp_fixture._parquet(
            {"id": [f"hr-{code}-1", f"hr-{code}-2"], "text": [f"hr question ({lang})", "no pool"]}
        )
        files[f"{subset}/top_ranked.parquet"] = rcp_fixture._parquet(
            {"query-id": [f"hr-{code}-1"], "corpus-ids": [["h1", "h2", "h3"]]}
        )
        rows = [
            (f"hr-{code}-1", "h1", 2, 0.9),
            (f"hr-{code}-1", "h2", 0, 0.5),
            (f"hr-{code}-1", "h3", 0, 0.1),
            (f"hr-{code}-2", "h2", 1, 0.7),
        ]
        files[f"{subset}/qrels.parquet"] = rcp_fixture.qrels_table([(*row, 0.0) for row in rows])


def _ghost_in_pool(files: dict[str, bytes]) -> None:
    files["energy__german/queries.parquet"] = rcp_fixture._parquet({"id": ["en-de-1"], "text": ["Welches Werk?"]})
    files["energy__german/top_ranked.parquet"] = rcp_fixture._parquet(
        {"query-id": ["en-de-1"], "corpus-ids": [["e1", "ghost", "e2"]]}
    )
    files["energy__german/qrels.parquet"] = rcp_fixture.qrels_parquet("en-de-1", [("e1", 2, 0.9, 1.0)])


@functools.cache
def release() -> dict[str, bytes]:
    files = rcp_fixture.release_files()
    _extra_hr_subsets(files)
    _ghost_in_pool(files)
    return rcp_fixture.with_card(files)


@pytest.fixture
def rcp(fake_hub, tmp_path, monkeypatch, registered):
    fake_hub.add_repo(REPO, SHA, release(), branch=None)
    monkeypatch.delenv("EVALS_REPRO_RCP_SNAPSHOT", raising=False)
    registered(METHODS, "scripted", scripted_method.build)
    registered(RERANKERS, "scripted", scripted_method.build_reranker)
    monkeypatch.setattr(scripted_method, "SCRIPT", {"hr-en-1": ["h4", "h3", "h2", "h1"]})
    monkeypatch.setattr(scripted_method, "FAIL_ON_SUBSET", set())
    monkeypatch.setattr(scripted_method, "RERANK_SCRIPT", RERANK)
    monkeypatch.setattr(scripted_method, "RERANK_CALLS", [])
    return tmp_path


def run(tmp_path, method, subsets, *extra, benchmark="vidore-v3-rcp"):
    chosen = [arg for name in subsets for arg in ("--subsets", name)]
    return main(
        [
            "run",
            method,
            "--benchmark",
            benchmark,
            "--revision",
            SHA,
            *chosen,
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
            *extra,
        ]
    )


def result(tmp_path, method, subset, benchmark="vidore-v3-rcp"):
    return json.loads((tmp_path / "results" / benchmark / method / f"{subset}.json").read_text())


HR_ALL = ["hr__english", "hr__french", *(f"hr__{lang}" for lang in OTHER_HR)]
SUBSETS = [*HR_ALL, "energy__english", "energy__french"]
RERANKED = "scripted+scripted@2"  # the scripted first stage would put h4 first
POOLED = "pool+scripted"  # what it runs as on the reranking view: the judged pool, reranked whole


def test_reranker_ranks_the_whole_pool_under_both_tie_rules(rcp, capsys):
    assert run(rcp, RERANKED, SUBSETS) == 0
    assert not (rcp / "results" / "vidore-v3-rcp" / RERANKED).exists()  # filed under what actually ran
    # The pool replaced the first stage and was reranked whole (depth 2 raised to the pool's 3), in pool order.
    calls = dict(scripted_method.RERANK_CALLS)
    assert calls["What is the leave policy?"] == ["h1", "h2", "h3"]
    assert calls.keys() == {t for t in RERANK if t != "no pool"}  # the pool-less queries were never ranked
    hr_en = result(rcp, POOLED, "hr__english")
    assert hr_en["protocol"]["tie_rule"] == "group-mean" and hr_en["config"]["view"] == "reranking"
    assert hr_en["source"]["view"] == "reranking" and hr_en["first_stage"] == "pool"
    pool = hr_en["config"]["pool"]
    assert (pool["first_stage"], pool["requested"], pool["largest_pool"]) == ("pool", RERANKED, 3)
    assert hr_en["metrics"]["ndcg_float_at_10"] == pytest.approx(HR_EN[0], abs=1e-12)
    assert hr_en["languages"]["english"]["metrics"]["ndcg_float_at_10"] == pytest.approx(HR_EN[0], abs=1e-12)
    assert hr_en["per_query"]["hr-en-1"]["metrics"]["ndcg_float_at_10"] == pytest.approx(HR_EN[0], abs=1e-12)
    assert hr_en["metrics"]["ndcg_at_10"] == pytest.approx(NDCG_HR_EN, abs=1e-4)
    assert result(rcp, POOLED, "hr__french")["metrics"]["ndcg_float_at_10"] == pytest.approx(HR_FR[0], abs=1e-12)
    assert result(rcp, POOLED, "hr__french")["metrics"]["ndcg_at_10"] == pytest.approx(NDCG_HR_FR, abs=1e-4)
    assert result(rcp, POOLED, "energy__english")["metrics"]["ndcg_float_at_10"] == pytest.approx(EN_EN[0])
    assert result(rcp, POOLED, "energy__french")["metrics"]["ndcg_float_at_10"] == pytest.approx(EN_FR[0])
    german = result(rcp, POOLED, "hr__german")
    assert german["n_queries"] == 1 and german["unpooled_queries"] == ["hr-ge-2"]
    assert german["metrics"]["ndcg_float_at_10"] == pytest.approx(1.0)

    # A changed tie rule is not covered by --resume: the saved run is re-scored (no reranking call); the same one is.
    capsys.readouterr()
    calls = len(scripted_method.RERANK_CALLS)
    assert run(rcp, RERANKED, ["hr__english", "energy__french"], "--resume", "--tie-rule", "doc-id") == 0
    assert "re-scoring the saved run (it was scored with another tie_rule)" in capsys.readouterr().err
    assert len(scripted_method.RERANK_CALLS) == calls
    hr_en = result(rcp, POOLED, "hr__english")
    assert hr_en["protocol"]["tie_rule"] == "doc-id"
    assert hr_en["metrics"]["ndcg_float_at_10"] == pytest.approx(HR_EN[1], abs=1e-12)
    assert result(rcp, POOLED, "energy__french")["metrics"]["ndcg_float_at_10"] == pytest.approx(EN_FR[1])
    assert run(rcp, RERANKED, ["hr__english"], "--resume", "--tie-rule", "doc-id") == 0
    assert "complete result kept" in capsys.readouterr().err


def test_first_stage_retrieves_the_corpus_then_keeps_the_pool(rcp):
    # --top-k 2 would give h4, h3 only; the run widens to the 4-page corpus, then drops h4 (not pooled).
    assert run(rcp, "scripted", ["hr__english"], "--top-k", "2") == 0
    hr_en = result(rcp, "scripted", "hr__english")
    assert hr_en["config"]["top_k"] == 2 and hr_en["config"]["pool"]["retrieved_top_k"] == 4
    # h3, h2, h1 (h4 restricted away): RCP (.1 + .5/log2 3 + .9/2) / ideal; integer nDCG as above.
    assert hr_en["metrics"]["ndcg_float_at_10"] == pytest.approx((0.1 + 0.5 / L + 0.45) / IDEAL_HR_EN, abs=1e-12)
    assert hr_en["metrics"]["ndcg_at_10"] == pytest.approx(NDCG_HR_EN, abs=1e-4)
    assert run(rcp, "scripted", ["hr__english"], "--tie-rule", "random") == 2


def test_retrieval_view_ranks_the_open_corpus(rcp):
    # h4, h3, h2, h1 as retrieved; h4 (outside the pool) has gain 0 but its grade 1 counts for nDCG@10.
    assert run(rcp, "scripted", ["hr__english"], benchmark="vidore-v3-rcp-retrieval") == 0
    hr_en = result(rcp, "scripted", "hr__english", benchmark="vidore-v3-rcp-retrieval")
    assert hr_en["source"]["view"] == "retrieval" and hr_en["config"]["pool"] is None
    assert hr_en["metrics"]["ndcg_float_at_10"] == pytest.approx(
        (0.1 / L + 0.5 / 2 + 0.9 / math.log2(5)) / IDEAL_HR_EN, abs=1e-12
    )
    assert hr_en["metrics"]["ndcg_at_10"] == pytest.approx((1 + 2 / math.log2(5)) / (2 + 1 / L), abs=1e-4)


def test_report_views_and_tie_rule_filter(rcp, capsys):
    assert run(rcp, RERANKED, SUBSETS) == 0
    assert run(rcp, "scripted", ["hr__english"], "--tie-rule", "doc-id") == 0
    decl = get_benchmark("vidore-v3-rcp")
    tables, notes = declared_report(rcp / "results", decl)
    assert notes == ["not shown, computed with another tie rule than group-mean: scripted (doc-id): hr__english"]
    titles = [t.title for t in tables]
    views = ("native-language view", "6-language mean view", "monolingual")  # no crosslingual run: no table
    assert titles == [f"vidore-v3-rcp — {v} — ndcg_at_10 (x100)" for v in views] + [
        f"vidore-v3-rcp — {v} — ndcg_float_at_10, group-mean ties (x100)" for v in views
    ]
    native, six = tables[3], tables[4]
    domains = native.columns[:-1]
    assert native.columns[-1] == "mean" and len(domains) == 8
    ((method, cells),) = native.rows
    assert method == POOLED
    expected = {"hr": HR_EN[0], "energy": EN_FR[0]}  # hr is asked natively in english, energy in french
    assert cells == [pytest.approx(expected[d]) if d in expected else None for d in domains] + [None]
    ((_, cells),) = six.rows
    hr_mean = (HR_EN[0] + HR_FR[0] + 4 * 1.0) / 6  # energy has two languages only: no cell
    assert cells == [pytest.approx(hr_mean) if d == "hr" else None for d in domains] + [None]

    capsys.readouterr()
    assert (
        main(["report", "--benchmark", "vidore-v3-rcp", "--results-dir", str(rcp / "results"), "--tie-rule", "doc-id"])
        == 0
    )
    captured = capsys.readouterr()
    assert f"not shown, computed with another tie rule than doc-id: {POOLED} (group-mean)" in captured.err
    assert "### vidore-v3-rcp — native-language view — ndcg_float_at_10, doc-id ties (x100)" in captured.out
    fs = (0.1 + 0.5 / L + 0.45) / IDEAL_HR_EN
    assert f"| scripted |  |  |  |  | {fs * 100:.1f} |  |  |  |  |" in captured.out
    assert (
        main(["report", "--benchmark", "vidore-v3-rcp", "--results-dir", str(rcp / "results"), "--tie-rule", "random"])
        == 2
    )
    assert "'random' is not one of 'group-mean', 'doc-id'" in capsys.readouterr().err
    # Only first stages: the one left was computed doc-id, so a group-mean report refuses, naming the rule.
    assert (
        main(["report", "--benchmark", "vidore-v3-rcp", "--results-dir", str(rcp / "results"), "--first-stage-only"])
        == 2
    )
    assert "no result of vidore-v3-rcp was computed with tie rule group-mean (they used doc-id)" in " ".join(
        capsys.readouterr().err.split()
    )
    assert (
        main(
            [
                "report",
                "--benchmark",
                "vidore-v3-rcp",
                "--results-dir",
                str(rcp / "results"),
                "--by",
                "query_type",
                "--measure",
                "ndcg_float_at_10",
                "--tie-rule",
                "doc-id",
            ]
        )
        == 0
    )
    assert "— scripted —" in (out := capsys.readouterr().out) and RERANKED not in out


def test_views_fill_means_only_with_every_subset(tmp_path):
    """Hand-made results for all 48 subsets: score = domain index / 10 + language index / 100."""
    decl = get_benchmark("vidore-v3-rcp")
    domains = list(decl.extra["native"])
    write_rcp_grid(tmp_path, decl)
    tables, _ = declared_report(tmp_path, decl)
    native, six = tables[0].rows[0][1], tables[1].rows[0][1]
    # native: english (index 0) except energy, finance_fr, physics (french, index 1)
    assert native[-1] == pytest.approx(sum(range(8)) / 10 / 8 + 3 * 0.01 / 8)  # 0.35375
    assert six[domains.index("hr")] == pytest.approx(0.4 + 0.025)  # hr is domain 4; mean language index 2.5
    assert six[-1] == pytest.approx(0.35 + 0.025)
    (tmp_path / "vidore-v3-rcp" / "m" / "physics__spanish.json").unlink()
    tables, _ = declared_report(tmp_path, decl)
    assert tables[1].rows[0][1][domains.index("physics")] is None and tables[1].rows[0][1][-1] is None
    assert tables[0].rows[0][1][-1] == pytest.approx(0.35375)  # physics' native subset is french: still there


def test_pool_naming_unknown_pages_is_one_line(rcp, capsys):
    # energy__german (overridden in this module's release) pools a page missing from the energy corpus.
    assert run(rcp, RERANKED, ["energy__german"]) == 2  # the only subset asked for was refused on its data
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: ") and "absent from the corpus" in last
    assert err.count("absent from the corpus") == 1 and "--resume" not in err


def test_a_hosted_reranker_on_the_reranking_view_builds_no_first_stage(rcp, monkeypatch, capsys):
    """`voyage-4+cohere@50` on the reranking view: the pool is the first stage, so no Voyage key is needed,
    no embedding request is sent, and the result is filed under what ran."""
    from fakes.rerankers import FakeCohereRerank

    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    with FakeCohereRerank() as fake:
        monkeypatch.setenv("COHERE_API_KEY", "k")
        monkeypatch.setenv("CO_API_URL", fake.url)
        assert run(rcp, "voyage-4+cohere@50", ["hr__english"]) == 0
        paths = {r.path for r in fake.requests}
    assert paths == {"/v2/rerank"}
    assert "runs as pool+cohere" in capsys.readouterr().err
    record = result(rcp, "pool+cohere", "hr__english")
    assert record["first_stage"] == "pool" and record["config"]["pool"]["requested"] == "voyage-4+cohere@50"
    assert record["config"]["pipeline"]["reranker"] == {"name": "cohere", "model": None, "depth": None}


def test_compare_reads_the_domain_views_strata(rcp, capsys, tmp_path):
    """--compare on the views: the native view's hr cell pairs hr__english's queries, the 6-language view's hr
    cell every hr language (weights 1/6); the differences are those of the view cells; --plots and HTML work."""
    assert run(rcp, RERANKED, SUBSETS) == 0
    assert run(rcp, "scripted", SUBSETS) == 0
    out = tmp_path / "cmp.csv"
    common = ["report", "--benchmark", "vidore-v3-rcp", "--results-dir", str(rcp / "results")]
    assert main([*common, "--compare", "--permutations", "500", "-o", str(out), "--plots", str(tmp_path / "p")]) == 0
    rows = {
        (r["table"].split(" — ")[1], r["table"].split(" — ")[2], r["column"]): r for r in csv.DictReader(out.open())
    }
    native = rows[("native-language view", "ndcg_at_10 (x100)", "hr")]
    six = rows[("6-language mean view", "ndcg_at_10 (x100)", "hr")]
    hr_queries = [sum(1 for e in result(rcp, "scripted", s)["per_query"].values()) for s in HR_ALL]
    assert int(native["queries"]) == hr_queries[0] and int(six["queries"]) == sum(hr_queries)
    for row in (native, six):
        assert float(row["diff"]) == pytest.approx(float(row["score"]) - float(row["vs_score"]), abs=2e-3)
    assert (tmp_path / "p" / "vidore-v3-rcp-native-language-view-ndcg_at_10-bars.svg").exists()
    assert main([*common, "--baseline", "scripted", "-o", str(tmp_path / "r.html")]) == 0
    assert "native-language view" in (tmp_path / "r.html").read_text()

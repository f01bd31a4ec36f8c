"""vidore-v3-rcp: gain link, loader views, `rcp replay` (hand-checked) and `rcp pool`, on a fixture release."""

from __future__ import annotations

import math

import pytest

import rcp_fixture
from evals_repro.benchmarks import LoadOptions, get_benchmark, load_subset
from evals_repro.cli import main
from evals_repro.errors import DataError, UsageError
from evals_repro.rcp.pool import check_subset_pools, inject_ground_truth
from evals_repro.rcp.release import RELEASES, Release, gain, resolve_revision
from evals_repro.rcp.replay import replay

L3 = math.log2(3)
V1, V2 = RELEASES["v1-nvidia-qwen3.5-397b-a17b-nvfp4"], RELEASES["v2-nvidia-qwen3.5-397b-a17b-nvfp4"]


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    return rcp_fixture.write_snapshot(tmp_path_factory.mktemp("rcp-release"))


def test_gain_link_by_hand(snapshot):
    params = Release(snapshot=snapshot).item_params()
    assert params == [(1.0, 0.0), (2.0, 1.0)]
    sigma1 = 1 / (1 + math.exp(-1.0))
    # theta = 1: sigma(1*(1-0)) and sigma(2*(1-1)) = 0.5 -> (1*sigma1 + 2*0.5) / 3
    assert gain(1.0, params) == pytest.approx((sigma1 + 1.0) / 3, abs=1e-15)
    assert gain(-800.0, params) == pytest.approx(0.0, abs=1e-300)
    assert gain(800.0, params) == 1.0


def test_revisions_resolve_by_tag():
    assert resolve_revision(None) == V2 == "4e5ca46e2f9c050b18a7f170c23e3ade66f78a4e"
    assert resolve_revision("v1") == V1 == "b22323345cb5639944600d490969bcce9fba7943"
    assert resolve_revision("v2-nvidia-qwen3.5-397b-a17b-nvfp4") == V2
    assert resolve_revision("a" * 40) == "a" * 40


def test_loader_views(snapshot, monkeypatch):
    monkeypatch.setenv("EVALS_REPRO_RCP_SNAPSHOT", str(snapshot))
    decl = get_benchmark("vidore-v3-rcp")
    assert len(decl.subsets) == 48
    subset = load_subset(decl, "hr__english")
    assert [p.id for p in subset.pages] == ["h1", "h2", "h3", "h4"]
    assert subset.pages[0].text == "OCR text of page h1" and subset.pages[0].image is None
    assert [(q.id, q.language) for q in subset.queries] == [("hr-en-1", "english")]
    assert subset.qrels == {"hr-en-1": {"h1": 2, "h4": 1}}
    # Every row with a gain, including the human positive outside the pool at 0.0.
    assert subset.gains == {"hr-en-1": {"h1": 0.9, "h2": 0.5, "h3": 0.1, "h4": 0.0}}
    assert subset.pools == {"hr-en-1": ["h1", "h2", "h3"]}
    assert subset.source["view"] == "reranking" and subset.source["revision"] == V2
    assert subset.source["domain_native_language"] == "english"

    open_corpus = load_subset(decl, "hr__english", LoadOptions(view="retrieval", revision="v1"))
    assert open_corpus.pools is None and open_corpus.source["revision"] == V1
    assert load_subset(get_benchmark("vidore-v3-rcp-retrieval"), "hr__english").pools is None

    images = load_subset(decl, "energy__french", LoadOptions(content="images"))
    assert images.pages[1].image == b"PNG-e2"

    with pytest.raises(UsageError, match="unknown view 'pooled'"):
        load_subset(decl, "hr__english", LoadOptions(view="pooled"))
    with pytest.raises(DataError, match="file not found"):
        load_subset(decl, "physics__french")


def _rcp(dcg, idcg):
    return dcg / idcg


# Hand-computed per-query scores of the fixture (see rcp_fixture.RUNS), as (doc-id rule, group-mean rule).
HR_EN_IDCG = 0.9 + 0.5 / L3 + 0.1 / 2
HR_FR_IDCG = 0.6 + 0.3 / L3 + 0.3 / 2
EN_EN_IDCG = 0.7 + 0.2 / L3 + 0.05 / 2
EN_FR_IDCG = 0.8 + 0.4 / L3 + 0.1 / 2
EXPECTED_RCP = {
    # rerank-2.5 on hr-en-1: h4 (0.99) lies outside the pool; h2/h3 tie at 0.5
    ("rerank-2.5", "hr", "english"): ((0.9 + 0.1 / L3 + 0.5 / 2) / HR_EN_IDCG, (0.9 + 0.3 / L3 + 0.3 / 2) / HR_EN_IDCG),
    ("zerank-2", "hr", "english"): ((0.5 + 0.1 / L3 + 0.9 / 2) / HR_EN_IDCG, (0.5 + 0.5 / L3 + 0.5 / 2) / HR_EN_IDCG),
    ("rerank-2.5", "hr", "french"): (1.0, 1.0),
    ("zerank-2", "hr", "french"): ((0.3 + 0.6 / L3 + 0.3 / 2) / HR_FR_IDCG, 0.4 * (1 + 1 / L3 + 0.5) / HR_FR_IDCG),
    ("rerank-2.5", "energy", "english"): (1.0, 1.0),
    ("zerank-2", "energy", "english"): ((0.2 + 0.05 / L3 + 0.7 / 2) / EN_EN_IDCG,) * 2,
    ("rerank-2.5", "energy", "french"): (
        (0.4 + 0.8 / L3 + 0.1 / 2) / EN_FR_IDCG,
        (0.4 + 0.45 / L3 + 0.45 / 2) / EN_FR_IDCG,
    ),
    # zerank-2's e2 score is NaN (dropped): e1 then e3
    ("zerank-2", "energy", "french"): ((0.1 + 0.4 / L3) / EN_FR_IDCG,) * 2,
}
EXPECTED_QREL = {
    ("rerank-2.5", "hr", "english"): (2 / (2 + 1 / L3),) * 2,
    ("zerank-2", "hr", "english"): (1 / (2 + 1 / L3), (1 / L3 + 0.5) / (2 + 1 / L3)),
    ("rerank-2.5", "hr", "french"): (1.0, 1.0),
    ("zerank-2", "hr", "french"): (1 / L3, (2 / 3) * (1 + 1 / L3 + 0.5) / 2),
    ("rerank-2.5", "energy", "english"): (1.0, 1.0),
    ("zerank-2", "energy", "english"): (0.5, 0.5),
    ("rerank-2.5", "energy", "french"): (1 / L3, (1 / L3 + 0.5) / 2),
    ("zerank-2", "energy", "french"): (0.0, 0.0),
}


def test_replay_numbers_by_hand(snapshot):
    result = replay(Release(snapshot=snapshot), domains=["hr", "energy"], languages=["english", "french"])
    assert result.models == ["rerank-2.5", "zerank-2"]  # the judge strategy is dropped
    for rule_index, rule in enumerate(("doc-id", "group-mean")):
        for metric, expected in (("rcp_ndcg_at_10", EXPECTED_RCP), ("qrel_ndcg_at_10", EXPECTED_QREL)):
            for (model, domain, language), values in expected.items():
                got = result.means[(model, domain, language, rule)][metric]
                assert got == pytest.approx(values[rule_index], abs=1e-12), (model, domain, language, rule, metric)
            for model in ("rerank-2.5", "zerank-2"):
                native = [
                    expected[(model, "hr", "english")][rule_index],
                    expected[(model, "energy", "french")][rule_index],
                ]
                assert result.cell("native", model, "hr", rule, metric) == pytest.approx(native[0], abs=1e-12)
                assert result.row_mean("native", model, rule, metric) == pytest.approx(sum(native) / 2, abs=1e-12)
                both = [
                    (expected[(model, d, "english")][rule_index] + expected[(model, d, "french")][rule_index]) / 2
                    for d in ("hr", "energy")
                ]
                assert result.row_mean("mean6", model, rule, metric) == pytest.approx(sum(both) / 2, abs=1e-12)


def test_rcp_replay_command(snapshot, capsys):
    code = main(
        ["rcp", "replay", "--snapshot", str(snapshot), "--domains", "hr,energy", "--languages", "english,french"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("| Reranker | hr | energy | Mean |") == 8
    # Voyage2.5, RCP-nDCG@10, native view, doc-id rule: hr 95.86 -> 95.9, energy 86.56 -> 86.6, mean 91.2
    hr = 100 * EXPECTED_RCP[("rerank-2.5", "hr", "english")][0]
    energy = 100 * EXPECTED_RCP[("rerank-2.5", "energy", "french")][0]
    assert f"| Voyage2.5 | {hr:.1f} | {energy:.1f} | {(hr + energy) / 2:.1f} |" == "| Voyage2.5 | 95.9 | 86.6 | 91.2 |"
    first_table = out.split("**qrel-nDCG@10")[0]
    assert "| Voyage2.5 | 95.9 | 86.6 | 91.2 |" in first_table
    assert main(["rcp", "replay", "--domains", "nowhere"]) == 2


def test_ground_truth_injection_rule():
    pool, injected = inject_ground_truth(["a", "b", "c", "d"], {"d": 1, "x": 2, "y": 1})
    # x (grade 2) first, into the lowest non-relevant slot (c, since d is relevant), then y into b
    assert pool == ["a", "y", "x", "d"] and injected == ["x", "y"]
    assert inject_ground_truth(["a"], {"a": 1, "z": 1}) == (["a", "z"], ["z"])


def test_pool_rebuild(snapshot):
    good = check_subset_pools(Release(snapshot=snapshot), "hr__german")
    assert (good.queries, good.fused_reproduced, good.max_score_diff) == (1, 1, 0.0)
    assert (good.queries_injected, good.pages_injected, good.pool_matches) == (1, 1, 1) and good.ok
    bad = check_subset_pools(Release(snapshot=snapshot), "energy__german")
    assert bad.fused_mismatch == ["en-de-1"] and bad.max_score_diff == pytest.approx(1e-9, rel=1e-3)


def test_rcp_pool_command(snapshot, capsys):
    assert main(["rcp", "pool", "--snapshot", str(snapshot), "--subsets", "hr__german"]) == 0
    assert "| hr__german | 1 | 1 | 0.0e+00 | 1 | 1 | 1 |" in capsys.readouterr().out
    assert main(["rcp", "pool", "--snapshot", str(snapshot), "--subsets", "hr__german,energy__german"]) == 2
    captured = capsys.readouterr()
    assert "energy__german: rrf_fused not reproduced for 1 queries, first en-de-1" in captured.out
    assert "error: pools not reproduced in 1 of 2 subsets" in captured.err


# -- the same release served by the fake Hub ----------------------------------------------------------------


@pytest.fixture
def hub(request, monkeypatch):
    """The session's fake Hub (tests/conftest.py) serving the fixture at v2 and a v1 whose h2 gain differs."""
    try:
        fake = request.getfixturevalue("fake_hub")
    except pytest.FixtureLookupError:
        pytest.skip("tests/conftest.py provides no fake_hub fixture")
    from evals_repro.rcp.release import REPO

    files = rcp_fixture.release_files()
    fake.add_repo(REPO, V2, files)
    old = dict(files)
    old["hr__english/qrels.parquet"] = rcp_fixture.qrels_parquet(
        "hr-en-1", [("h1", 2, 0.9, 1.5), ("h2", 0, 0.45, 0.1), ("h3", 0, 0.1, -1.0), ("h4", 1, 0.0, None)]
    )
    fake.add_repo(REPO, V1, old, branch=None)
    monkeypatch.delenv("EVALS_REPRO_RCP_SNAPSHOT", raising=False)
    return fake


def test_loader_through_fake_hub(hub, monkeypatch):
    decl = get_benchmark("vidore-v3-rcp")
    subset = load_subset(decl, "hr__english")
    assert subset.gains["hr-en-1"]["h2"] == 0.5 and subset.source["revision"] == V2
    assert subset.pools == {"hr-en-1": ["h1", "h2", "h3"]}
    older = load_subset(decl, "hr__english", LoadOptions(revision="v1-nvidia-qwen3.5-397b-a17b-nvfp4"))
    assert older.gains["hr-en-1"]["h2"] == 0.45 and older.source["revision"] == V1
    # A second load from the cache with HF_HUB_OFFLINE makes no request.
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    hub.clear_requests()
    again = load_subset(decl, "hr__english")
    assert again.gains == subset.gains and hub.requests == []


def test_replay_and_pool_through_fake_hub(hub, capsys):
    assert main(["rcp", "replay", "--domains", "hr,energy", "--languages", "english,french"]) == 0
    out = capsys.readouterr().out
    assert f"at revision {V2}" in out and "| Voyage2.5 | 95.9 | 86.6 | 91.2 |" in out
    assert main(["rcp", "pool", "--subsets", "hr__german"]) == 0
    assert "| hr__german | 1 | 1 | 0.0e+00 | 1 | 1 | 1 |" in capsys.readouterr().out

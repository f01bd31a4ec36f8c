"""vidore-v3-rcp: gain link, loader views, `rcp replay` (hand-checked) and `rcp pool`, on a fixture release."""

from __future__ import annotations

import json
import math

import pytest

import rcp_fixture
from evals_repro.base.errors import DataError, UsageError
from evals_repro.benchmarks import LoadOptions, get_benchmark, load_subset
from evals_repro.benchmarks.rcp_gain import gain
from evals_repro.benchmarks.rcp_release import PINNED_REVISION, REPO, Release, parse_releases, resolve_tag
from evals_repro.cli import main
from evals_repro.rcp.pool import check_subset_pools, inject_ground_truth
from evals_repro.rcp.replay import replay

L3 = math.log2(3)
V1, V2 = rcp_fixture.V1, rcp_fixture.V2


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


def test_revisions_resolve_by_the_release_own_tags(snapshot):
    tags = parse_releases(rcp_fixture.releases_json(rcp_fixture.TAGS).decode(), "releases.json")
    assert tags == rcp_fixture.TAGS
    assert resolve_tag("v1", tags) == V1 and resolve_tag("v2-nvidia-qwen3.5-397b-a17b-nvfp4", tags) == V2
    assert resolve_tag("v3", tags) is None
    assert parse_releases(json.dumps({"v9-x": "c" * 40}), "r.json") == {"v9-x": "c" * 40}
    with pytest.raises(DataError, match="no release tags"):
        parse_releases(json.dumps({"releases": [{"tag": "v1", "commit": "main"}]}), "r.json")
    assert Release(snapshot=snapshot).revision == PINNED_REVISION == V2
    assert Release(snapshot=snapshot, revision="v1").revision == V1
    assert Release(snapshot=snapshot, revision="a" * 40).revision == "a" * 40
    with pytest.raises(UsageError, match="not a release"):
        Release(snapshot=snapshot, revision="v7")


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
    # provenance/first_stage/hr.parquet also holds hr-it-9 (another subset): left out of hr__german's check
    assert (good.queries, good.fused_reproduced, good.max_score_diff) == (1, 1, 0.0)
    assert (good.queries_injected, good.pages_injected, good.pool_matches) == (1, 1, 1)
    assert (good.injected_matches, good.injected_mismatch) == (1, []) and good.ok
    bad = check_subset_pools(Release(snapshot=snapshot), "energy__german")
    assert bad.fused_mismatch == ["en-de-1"] and bad.max_score_diff == pytest.approx(1e-9, rel=1e-3)


def test_rcp_pool_command(snapshot, capsys):
    assert main(["rcp", "pool", "--snapshot", str(snapshot), "--subsets", "hr__german"]) == 0
    assert "| hr__german | 1 | 1 | 0.0e+00 | 1 | 1 | 1 | 1 |" in capsys.readouterr().out
    assert main(["rcp", "pool", "--snapshot", str(snapshot), "--subsets", "hr__german,energy__german"]) == 2
    captured = capsys.readouterr()
    assert "energy__german: rrf_fused not reproduced for 1 queries, first en-de-1" in captured.out
    assert "error: pools not reproduced in 1 of 2 subsets" in captured.err


# -- the same release served by the fake Hub ----------------------------------------------------------------


@pytest.fixture
def hub(request, monkeypatch):
    """The session's fake Hub (tests/conftest.py) serving the fixture at v2 and a v1 whose h2 gain differs."""
    fake = request.getfixturevalue("fake_hub")
    from evals_repro.benchmarks.rcp_release import REPO

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
    assert "| hr__german | 1 | 1 | 0.0e+00 | 1 | 1 | 1 | 1 |" in capsys.readouterr().out


# -- the release's own layout: shared corpus, provenance split by domain, tags from releases.json ---------------


def test_six_languages_read_one_shared_domain_corpus(hub):
    """The card names one corpus per domain: no `{subset}/corpus.parquet` is asked for, one shard is fetched."""
    decl = get_benchmark("vidore-v3-rcp")
    fresh = "5" * 40  # a commit nothing has cached yet
    hub.add_repo(REPO, fresh, rcp_fixture.release_files(), branch=None)
    hub.clear_requests()
    english = load_subset(decl, "hr__english", LoadOptions(revision=fresh))
    french = load_subset(decl, "hr__french", LoadOptions(revision=fresh))
    assert [p.id for p in english.pages] == [p.id for p in french.pages] == ["h1", "h2", "h3", "h4"]
    assert [q.id for q in french.queries] == ["hr-fr-1"]
    files = [(method, path.split(f"/resolve/{fresh}/")[1]) for method, path in hub.requests if "/resolve/" in path]
    assert not [f for _, f in files if f.endswith("/corpus.parquet")]
    # one probe of the shared shard (its bytes may already be in the cache under another commit), then none
    assert [m for m, f in files if f == "hr/corpus/test-00000-of-00001.parquet"].count("HEAD") == 1


def test_a_new_release_tag_resolves_from_releases_json(hub, monkeypatch):
    """A tag no table in the code knows: main's provenance/releases.json names its commit."""
    from evals_repro.benchmarks import hub as hub_access

    monkeypatch.setattr(hub_access, "_RESOLVED", {})  # main moves during this test (a new process would see it)
    v3 = "3" * 40
    files = rcp_fixture.release_files()
    files["hr__english/qrels.parquet"] = rcp_fixture.qrels_parquet(
        "hr-en-1", [("h1", 2, 0.8, 1.5), ("h2", 0, 0.33, 0.2), ("h3", 0, 0.1, -1.0), ("h4", 1, 0.0, None)]
    )
    hub.add_repo(REPO, v3, files, branch=None)
    main_files = rcp_fixture.release_files()
    main_files["provenance/releases.json"] = rcp_fixture.releases_json({**rcp_fixture.TAGS, "v3-test-judge": v3})
    hub.add_repo(REPO, "4" * 40, main_files)  # main moves on
    newer = load_subset(get_benchmark("vidore-v3-rcp"), "hr__english", LoadOptions(revision="v3"))
    assert newer.source["revision"] == v3 and newer.gains["hr-en-1"]["h2"] == 0.33
    assert Release(revision="v3-test-judge").revision == v3 and Release(revision="v1").revision == V1
    with pytest.raises(DataError, match="revision v9 does not exist"):
        Release(revision="v9").subset_table("hr__english", "qrels", ("query-id",))


def test_pool_check_compares_injection_with_provenance_pool(tmp_path, capsys):
    """`gt_injected` is read from provenance-pool: a release that marks another page injected is reported."""
    import pyarrow.parquet as pq

    snapshot = rcp_fixture.write_snapshot(tmp_path / "release")
    pool_file = snapshot / "provenance" / "pool" / "hr.parquet"
    table = pq.read_table(pool_file).to_pydict()
    table["gt_injected"] = [doc == "x000" for doc in table["corpus-id"]]
    pool_file.write_bytes(rcp_fixture._parquet(table))
    check = check_subset_pools(Release(snapshot=snapshot), "hr__german")
    assert check.pool_matches == 1 and check.injected_mismatch == ["hr-de-1"] and not check.ok
    assert main(["rcp", "pool", "--snapshot", str(snapshot), "-s", "hr__german"]) == 2
    out = capsys.readouterr().out
    assert "| hr__german | 1 | 1 | 0.0e+00 | 1 | 1 | 1 | 0 |" in out
    assert "hr__german: injected pages differ from provenance-pool's gt_injected for 1 queries, first hr-de-1" in out
    # A release without provenance-pool: the comparison is shown as not available, not as a failure.
    files = {k: v for k, v in rcp_fixture.release_files().items() if not k.startswith("provenance/pool/")}
    older = tmp_path / "older"
    for relpath, data in rcp_fixture.with_card(files).items():
        (older / relpath).parent.mkdir(parents=True, exist_ok=True)
        (older / relpath).write_bytes(data)
    assert b"provenance-pool" not in (older / "README.md").read_bytes()
    check = check_subset_pools(Release(snapshot=older), "hr__german")
    assert check.injected_matches is None and check.ok


def test_replay_reads_the_conventional_paths_without_a_card(snapshot, tmp_path):
    """Without a card, the paths cohere-ai/rcp-ndcg's experiments/fetch_data.py fetches are enough:
    `{domain}__{lang}/{qrels,top_ranked}.parquet` and `provenance/runs/{domain}.parquet`."""
    import itertools
    import shutil

    bare = tmp_path / "fetched"
    for domain, language in itertools.product(("hr", "energy"), ("english", "french")):
        for part in ("qrels", "top_ranked"):
            target = bare / f"{domain}__{language}" / f"{part}.parquet"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(snapshot / f"{domain}__{language}" / f"{part}.parquet", target)
        (bare / "provenance" / "runs").mkdir(parents=True, exist_ok=True)
        shutil.copy(snapshot / "provenance" / "runs" / f"{domain}.parquet", bare / "provenance" / "runs")
    assert not (bare / "README.md").exists()
    result = replay(Release(snapshot=bare), domains=["hr", "energy"], languages=["english", "french"])
    full = replay(Release(snapshot=snapshot), domains=["hr", "energy"], languages=["english", "french"])
    # 2 models x 2 domains x 2 languages x the card's 2 tie rules (what a replay computes)
    assert result.means == full.means and len(result.means) == 2 * 2 * 2 * 2

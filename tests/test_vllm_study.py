"""The reranking study with the local vLLM rerankers: prefix caching proven off before any timed call.

Runs `rerank-study quality|latency` on the bundled sample (BM25 candidates) against fake vLLM replicas.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from evals_repro.base.errors import ConfigurationError, UsageError
from evals_repro.base.io import read_jsonl
from evals_repro.rerankers import vllm as client
from evals_repro.rerankers.vllm_metrics import CacheCheckFailed
from evals_repro.study.latency import LATENCY, WARMUP, LatencyRequest, run_latency
from evals_repro.study.quality import QUALITY, QualityRequest, run_quality
from evals_repro.study.report import write_report
from fakes.vllm import FakeVllm

QUIET = lambda _line: None  # noqa: E731
QWEN_ID = "Qwen/Qwen3-Reranker-8B@77d193c791ed757ca307ee72715aa132723da912"
ZERANK_ID = "zeroentropy/zerank-2@5eae30d5ee3c6b2df2ef6d723bde45172d761c4c"
PROBE = "Which maintenance intervals apply to the heat exchanger"


@pytest.fixture(autouse=True)
def fresh_replicas():
    client.reset_replica_sets()
    yield
    client.reset_replica_sets()


def start(monkeypatch, env: str, *fakes: FakeVllm) -> None:
    for fake in fakes:
        fake.__enter__()
    monkeypatch.setenv(env, ",".join(f.url for f in fakes))


@pytest.fixture
def replicas(monkeypatch):
    """Two qwen3-8b replicas and one zerank-2 replica, prefix caching off."""
    fakes = {
        "qwen": [FakeVllm(QWEN_ID, "yes-no"), FakeVllm(QWEN_ID, "yes-no", stats_lag=3)],
        "zerank": [FakeVllm(ZERANK_ID, "Yes", default_use_activation=False)],
    }
    start(monkeypatch, "QWEN_RERANK_URLS", *fakes["qwen"])
    start(monkeypatch, "ZERANK_RERANK_URLS", *fakes["zerank"])
    yield fakes
    for fake in [*fakes["qwen"], *fakes["zerank"]]:
        fake.__exit__(None, None, None)


def latency(study: Path, models: list[str], tmp_path: Path) -> dict[str, int]:
    return run_latency(
        LatencyRequest(study_dir=study, models=models, samples=2, repeats=2, cache_dir=tmp_path / "cache"),
        echo=QUIET,
    )


def classify_prompts(fake: FakeVllm) -> list[str]:
    return list(fake.prompts)


def test_latency_checks_every_replica_first_and_records_it(study, replicas, tmp_path):
    counts = latency(study, ["qwen3-8b", "zerank-2"], tmp_path)
    assert counts["failed"] == 0 and counts["timed"] > 0
    manifest = json.loads((study / "manifest.json").read_text())
    session = manifest["sessions"][-1]
    assert session["status"] == "completed"
    checks = session["prefix_cache"]
    assert [c["replica"] for c in checks["qwen3-8b"]] == [f.url for f in replicas["qwen"]]
    assert [c["replica"] for c in checks["zerank-2"]] == [replicas["zerank"][0].url]
    for check in [*checks["qwen3-8b"], *checks["zerank-2"]]:
        assert check["verified_off"] is True and check["enable_prefix_caching"] == "False"
        assert check["counters"]["vllm:prefix_cache_queries_total"] == [0.0, 0.0]
        assert check["counters"]["vllm:prefix_cache_hits_total"] == [0.0, 0.0]
    # on every replica the two probes came before anything else was scored
    for fake in [*replicas["qwen"], *replicas["zerank"]]:
        prompts = classify_prompts(fake)
        assert PROBE in prompts[0] and PROBE in prompts[1] and prompts[0] == prompts[1]
        assert not any(PROBE in p for p in prompts[2:])
    records = read_jsonl(study / LATENCY)
    assert {r["model"] for r in records} == {"qwen3-8b", "zerank-2"}
    assert all(r["status"] == "ok" and r["latency_ms"] > 0 for r in records)
    # both qwen replicas took timed calls
    assert all(len(f.prompts) > 2 for f in replicas["qwen"])


@pytest.mark.parametrize(
    "fake_options, why",
    [
        ({"prefix_caching": True}, "prefix caching is enabled (vllm:cache_config_info enable_prefix_caching=True)"),
        ({"metrics": False}, "it exports no /metrics"),
        ({"cache_info": None}, "its /metrics has no vllm:cache_config_info"),
        ({"counters": False}, "its /metrics lacks vllm:prefix_cache_queries_total"),
        ({"prefix_caching": True, "cache_info": "False"}, "a repeated request moved its prefix-cache counters"),
    ],
)
def test_latency_refuses_a_replica_whose_cache_is_not_verifiably_off(fake_options, why, study, monkeypatch, tmp_path):
    good, bad = FakeVllm(QWEN_ID, "yes-no"), FakeVllm(QWEN_ID, "yes-no", **fake_options)
    start(monkeypatch, "QWEN_RERANK_URLS", good, bad)
    try:
        with pytest.raises(CacheCheckFailed) as raised:
            latency(study, ["qwen3-8b"], tmp_path)
    finally:
        good.__exit__(None, None, None)
        bad.__exit__(None, None, None)
    assert raised.value.one_line().startswith(f"qwen3-8b replica {bad.url}: {why}")
    assert "\n" not in raised.value.one_line()
    # nothing was timed or warmed up: the only scored prompts are the cache probes
    assert read_jsonl(study / LATENCY) == [] and read_jsonl(study / WARMUP) == []
    assert all(PROBE in p for p in good.prompts + bad.prompts)
    manifest = json.loads((study / "manifest.json").read_text())
    assert manifest["sessions"][-1]["status"] == "failed"


def test_latency_refuses_when_statistics_never_arrive(study, monkeypatch, tmp_path):
    import evals_repro.rerankers.vllm_metrics as metrics

    monkeypatch.setattr(metrics, "STATS_TIMEOUT", 0.3)
    fake = FakeVllm(QWEN_ID, "yes-no", stats_recorded=False)
    start(monkeypatch, "QWEN_RERANK_URLS", fake)
    try:
        with pytest.raises(CacheCheckFailed, match="did not record the two probe requests"):
            latency(study, ["qwen3-8b"], tmp_path)
    finally:
        fake.__exit__(None, None, None)


def test_resuming_timings_without_recorded_checks_needs_a_new_study_dir(study, replicas, tmp_path):
    latency(study, ["qwen3-8b"], tmp_path)
    # an earlier session that timed qwen3-8b without the check (as before this protocol existed)
    manifest = json.loads((study / "manifest.json").read_text())
    del manifest["sessions"][-1]["prefix_cache"]
    (study / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UsageError) as raised:
        latency(study, ["qwen3-8b"], tmp_path)
    assert "qwen3-8b was timed in session" in raised.value.message and "pick a new --study-dir" in raised.value.hint
    # a model never timed before is not held back by it
    counts = latency(study, ["zerank-2"], tmp_path)
    assert counts["failed"] == 0 and counts["timed"] > 0


def test_quality_scores_with_local_models_and_counts_truncation_per_subset(study, replicas, monkeypatch, tmp_path):
    from evals_repro.rerankers import local_models

    # A 200-token context, so that sample pages need cutting (the fakes serve the same context).
    small = dataclasses.replace(local_models.QWEN3_8B, context_tokens=200)
    monkeypatch.setitem(local_models.LOCAL_RERANKERS, "qwen3-8b", small)
    for fake in replicas["qwen"]:
        fake.max_model_len = 200
    counts = run_quality(
        QualityRequest(study_dir=study, models=["qwen3-8b", "zerank-2"], cache_dir=tmp_path / "cache"), echo=QUIET
    )
    records = read_jsonl(study / QUALITY)
    assert counts["failed"] == 0 and {r["status"] for r in records} == {"ok"}
    assert {r["model_id"] for r in records} == {QWEN_ID, ZERANK_ID}
    # expected cuts, counted with the fake's tokenizer on the card's prompt written out here
    fake = replicas["qwen"][0]
    head = (
        "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the "
        'Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
        "<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n<Query>: {q}\n"
        "<Document>: {d}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    expected: dict[str, int] = {}
    for path in sorted((study / "candidates/sample").glob("*.jsonl")):
        subset = path.name.removesuffix(".jsonl")
        texts = json.loads(path.with_name(f"{subset}.pages.json").read_text())
        for line in read_jsonl(path):
            expected[subset] = expected.get(subset, 0) + sum(
                len(fake.encode(head.format(q=line["query"], d=texts[i]))) > 200 for i in line["ids"]
            )
    got: dict[str, int] = {}
    for r in records:
        if r["model"] == "qwen3-8b":
            got[r["subset"]] = got.get(r["subset"], 0) + r["truncated_documents"]
    assert got == expected and all(n > 0 for n in expected.values())
    assert all(r["truncated_documents"] == 0 for r in records if r["model"] == "zerank-2")
    assert all(len(ids) <= 200 for f in replicas["qwen"] for inputs in f.classify_inputs for ids in inputs)
    report = write_report(study, resamples=50)["report"].read_text()
    assert (
        "Documents truncated to fit a model's context: "
        + ", ".join(f"qwen3-8b {s} {n}" for s, n in sorted(expected.items()))
        in report
    )


def test_quality_stops_at_once_on_an_unusable_replica(study, monkeypatch, tmp_path):
    with FakeVllm("someone/else", "yes-no") as fake:
        monkeypatch.setenv("ZERANK_RERANK_URLS", fake.url)
        with pytest.raises(ConfigurationError, match=f"zerank-2 replica {fake.url} serves someone/else"):
            run_quality(QualityRequest(study_dir=study, models=["zerank-2"], cache_dir=tmp_path / "cache"), echo=QUIET)
        assert [r.path for r in fake.requests] == ["/v1/models"]
    assert read_jsonl(study / QUALITY) == []

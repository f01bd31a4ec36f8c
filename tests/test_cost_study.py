"""Plans and costs of the reranking study against the fake rerank providers: planned requests equal the
requests the fakes see, planned tokens within 10% of what Voyage reports, cost per call, per model and per
1,000 queries in the manifest and the report, and a --max-cost stop that a rerun resumes."""

from __future__ import annotations

import json

import pytest

import test_study
from evals_repro.base.io import read_jsonl
from evals_repro.planning.study import plan_latency, plan_quality
from evals_repro.providers.ceiling import CostCeilingReached, CostGuard, install_guard
from evals_repro.providers.prices import current_prices, usd_text
from evals_repro.study.latency import LatencyRequest, run_latency
from evals_repro.study.quality import QUALITY, QualityRequest, run_quality
from evals_repro.study.report import write_report
from fakes.base import count_tokens
from fakes.rerankers import count_requests
from test_study import FAST, QUIET

# the study's fake rerank providers (the prepared sample study, copied per test, is conftest's `study`)
providers = test_study.providers

MODELS = ["cohere-pro", "voyage"]


def voyage_reported(fake) -> int:
    """What the Voyage fake counts for a rerank: query tokens x documents + document tokens (its own tokenizer)."""
    total = 0
    for r in fake.requests:
        if r.path.startswith("/v1/rerank"):
            body = r.json
            total += sum(count_tokens(body["query"]) + count_tokens(d) for d in body["documents"])
    return total


def test_quality_plan_matches_the_fakes_and_costs_land_in_records_manifest_and_report(study, providers, tmp_path):
    cache = tmp_path / "cache"
    request = QualityRequest(study_dir=study, models=MODELS, cache_dir=cache, options=FAST)
    planned = plan_quality(request)
    run_quality(request, echo=QUIET)
    cohere, voyage = providers["cohere"], providers["voyage"]
    lines = {(line.provider, line.what): line for line in planned.lines.values()}
    assert lines[("cohere", "quality")].requests == count_requests(cohere, "POST", "/v2/rerank")
    assert lines[("voyage", "quality")].requests == count_requests(voyage, "POST", "/v1/rerank")
    # cold: the first guess (0.75 words a token) within 10% of what the fake counted
    ratio = lines[("voyage", "quality")].tokens / voyage_reported(voyage)
    print(f"cold voyage quality tokens: planned / reported = {ratio:.3f}")
    assert abs(ratio - 1) < 0.10, ratio
    records = read_jsonl(study / QUALITY)
    queries = len({r["query_id"] for r in records})
    price = current_prices().price("cohere", "rerank-v4.0-pro", "searches")
    for record in records:
        if record["model"] == "cohere-pro":  # <= 100 candidates: one search per query
            assert record["billed"] == {"cohere rerank-v4.0-pro": {"searches": 1}}
            assert record["cost_usd"] == pytest.approx(price.usd / price.per)
    manifest = json.loads((study / "manifest.json").read_text())
    cohere_cost = manifest["cost"]["models"]["cohere-pro"]
    assert cohere_cost["quality_queries"] == queries
    assert cohere_cost["usd_per_1000_queries"] == pytest.approx(1000 * price.usd / price.per)
    report = write_report(study)["report"].read_text()
    assert "## Cost (USD" in report and usd_text(1000 * price.usd / price.per) in report
    # warm: everything answered, nothing planned
    again = plan_quality(request)
    assert again.requests == 0 and again.billed() == {}
    assert sum(line.held for line in again.lines.values()) == len(records)


def test_latency_plan_after_quality_is_within_10_percent_of_voyage_tokens(study, providers, tmp_path):
    """Quality saves what Voyage counted against the estimate; the latency plan of the same model is scaled
    by it (measured: cold 1.0x-1.6x high, calibrated within a few percent)."""
    cache = tmp_path / "cache"
    cache.mkdir(exist_ok=True)
    run_quality(QualityRequest(study_dir=study, models=["voyage"], cache_dir=cache, options=FAST), echo=QUIET)
    assert (cache / "token-ratios.json").exists()
    voyage = providers["voyage"]
    voyage.requests.clear()
    request = LatencyRequest(study_dir=study, models=["voyage"], samples=3, repeats=2, cache_dir=cache, options=FAST)
    planned = plan_latency(request)
    run_latency(request, echo=QUIET)
    tokens = sum(line.tokens for line in planned.lines.values())
    assert planned.requests == count_requests(voyage, "POST", "/v1/rerank")
    assert abs(tokens / voyage_reported(voyage) - 1) < 0.10


def test_latency_plan_counts_timed_and_warm_up_calls(study, providers, tmp_path):
    request = LatencyRequest(study_dir=study, models=["cohere-pro"], samples=2, repeats=2, cache_dir=tmp_path / "c")
    planned = plan_latency(request)
    assert not (study / "latency-plan.json").exists()  # a plan writes nothing
    before = count_requests(providers["cohere"], "POST", "/v2/rerank")
    run_latency(request, echo=QUIET)
    sent = count_requests(providers["cohere"], "POST", "/v2/rerank") - before
    assert planned.requests == sent
    assert plan_latency(request).requests == 0


def test_max_cost_stops_quality_and_a_rerun_sends_only_the_rest(study, providers, tmp_path):
    request = QualityRequest(study_dir=study, models=["cohere-pro"], cache_dir=tmp_path / "c", options=FAST)
    planned = plan_quality(request)
    price = current_prices().price("cohere", "rerank-v4.0-pro", "searches")
    install_guard(CostGuard(5.5 * price.usd / price.per, current_prices()))  # room for five searches
    try:
        with pytest.raises(CostCeilingReached):
            run_quality(
                QualityRequest(
                    study_dir=study, models=["cohere-pro"], cache_dir=tmp_path / "c", workers=1, options=FAST
                ),
                echo=QUIET,
            )
    finally:
        install_guard(None)
    answered = [r for r in read_jsonl(study / QUALITY) if r["status"] == "ok"]
    assert len(answered) == 5
    counts = run_quality(request, echo=QUIET)
    assert counts["reused"] == 5 and counts["sent"] == planned.requests - 5
    assert count_requests(providers["cohere"], "POST", "/v2/rerank") == planned.requests


KEYS = ("VOYAGE_API_KEY", "COHERE_API_KEY", "CO_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "MXBAI_API_KEY")


def test_study_plans_need_no_key_through_the_cli(study, providers, tmp_path, monkeypatch, capsys):
    """The keys are checked before any work, but never for --plan (no key is read, no request is sent)."""
    from evals_repro.cli import main

    for variable in (*KEYS, "OPENAI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)  # no .env around
    common = ["--study-dir", str(study), "--cache-dir", str(tmp_path / "c"), "--plan"]
    assert main(["rerank-study", "quality", "--models", "cohere-pro", "--models", "voyage", *common]) == 0
    assert "rerank-v4.0-pro" in capsys.readouterr().out
    assert main(["rerank-study", "latency", "--models", "voyage", "--samples", "2", "--repeats", "1", *common]) == 0
    assert "rerank-2.5" in capsys.readouterr().out
    assert count_requests(providers["cohere"], "POST", "/v2/rerank") == 0
    assert count_requests(providers["voyage"], "POST", "/v1/rerank") == 0
    # without --plan the same command stops on the missing keys, naming them
    assert main(["rerank-study", "quality", "--models", "voyage", *common[:-1]]) == 2
    assert "VOYAGE_API_KEY" in capsys.readouterr().err


def test_cost_per_1000_queries_counts_a_query_scored_again_by_a_new_plugin_version(tmp_path):
    """A plugin reranker upgraded mid-study scores its queries again and pays again: per 1,000 queries is what
    the quality phase spent over the queries it scored, each version's counted. By hand: 4 calls billed 1 Cohere
    search each at $2.50 per 1,000 searches (the shipped table) = $0.01 over 4 scorings = $2.50 per 1,000 (not
    $5.00, as over the 2 distinct queries)."""
    from evals_repro.study.costs import study_costs

    billed = {"cohere rerank-v4.0-pro": {"searches": 1}}
    rows = [
        {"model": "acme", "model_id": "", "plugin": f"acme-rerank {version}", "benchmark": "sample"}
        | {"subset": "heat-pumps", "query_id": query, "status": "ok", "billed": billed}
        for version in ("1.0", "1.1")
        for query in ("q1", "q2")
    ]
    (tmp_path / "quality.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    entry = study_costs(tmp_path)["models"]["acme"]
    assert entry["usd"] == pytest.approx(0.01) and entry["by_phase"] == {"quality": pytest.approx(0.01)}
    assert entry["quality_queries"] == 4
    assert entry["usd_per_1000_queries"] == pytest.approx(2.5)

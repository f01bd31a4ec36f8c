"""`answer --plan` and the cost of answer runs, against the fake Gemini and OpenAI-compatible servers on the
hub fixtures: planned calls equal the calls the fakes see, a finished run plans nothing, spend carries USD."""

from __future__ import annotations

import pytest

import test_vidore_answer
from evals_repro.cli import main
from evals_repro.planning.answer import plan_answer
from evals_repro.vidore_paper.answer import run_answer
from evals_repro.vidore_paper.contexts import Pipeline
from test_vidore_answer import QUIET, panel, pipeline_request

# the answer tests' fixtures: the fake hub with the hr and energy domains, and the fake LLM servers
hub, servers = test_vidore_answer.hub, test_vidore_answer.servers


def download(request) -> None:
    """Fetch the domains from the fake hub into the local cache (a plan reads only what is here)."""
    from evals_repro.benchmarks import LoadOptions, get_benchmark
    from evals_repro.vidore_paper.annotations import load_paper_subset

    decl = get_benchmark(request.benchmark)
    for name in request.subsets:
        load_paper_subset(decl, name, LoadOptions(cache_dir=request.cache_dir), request.language)


def calls(servers) -> int:
    return len(servers["gemini"].reported) + len(servers["openai"].reported)


def test_panel_plan_counts_every_generator_and_judge_call_then_nothing(servers, tmp_path, monkeypatch):
    request = panel(tmp_path)
    download(request)
    for variable in ("GEMINI_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(variable)
    planned = plan_answer(request)  # no key
    kinds = {(line.provider, line.what): line.requests for line in planned.lines.values()}
    # 3 queries x 2 panel models: 6 answers, 6 verdicts by the judge
    assert kinds == {("gemini", "generation"): 3, ("openai", "generation"): 3, ("openai", "judge"): 6}
    for variable, value in servers["env"].items():
        monkeypatch.setenv(variable, value)
    result = run_answer(request, echo=QUIET)
    assert planned.requests == calls(servers) == 12
    again = plan_answer(request)
    assert again.requests == 0 and sum(line.held for line in again.lines.values()) == 12
    # fake models have no price: the spend names them, never $0
    assert result["spend"]["total"]["cost_usd"] is None
    assert "gemini fake-pro (input_tokens)" in result["spend"]["total"]["price_unknown"]


def test_pipeline_plan_before_contexts_exist_and_priced_spend(servers, tmp_path):
    prices = tmp_path / "prices.json"
    entries = [
        {"provider": p, "model": m, "unit": u, "usd": 1.0, "per": 1_000_000}
        for p, m in (("gemini", "fake-pro"), ("openai", "fake-judge"))
        for u in ("input_tokens", "output_tokens")
    ]
    import json

    prices.write_text(json.dumps({"date": "2026-03-04", "prices": entries}))
    request = pipeline_request(tmp_path, Pipeline("text", retriever="bm25"))
    download(request)
    planned = plan_answer(request)
    assert any("contexts not built yet" in note for note in planned.notes)
    args = ["answer", "-s", "hr", "-s", "energy", "--retriever", "bm25", "--generator", "gemini:fake-pro"]
    args += ["--judge", "openai:fake-judge", "--out-dir", str(tmp_path), "--prices", str(prices)]
    assert main(args) == 0
    assert planned.requests == calls(servers) == 6
    result = json.loads(next((tmp_path / "answer").glob("*/result.json")).read_text())
    total = result["spend"]["total"]
    # $1 per million tokens in and out: the cost is the reported tokens / 1e6
    assert total["cost_usd"] == pytest.approx((total["tokens_in"] + total["tokens_out"]) / 1e6)
    assert total["prices_date"] == "2026-03-04"
    assert main([*args, "--plan"]) == 0
    assert plan_answer(request).requests == 0


def test_answer_plan_through_the_cli_needs_no_key(servers, tmp_path, monkeypatch, capsys):
    request = panel(tmp_path)
    download(request)
    for variable in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)  # no .env around
    args = ["answer", "-s", "hr", "-s", "energy", "--no-context", "--models", "gemini:fake-pro", "openai:fake-oss"]
    args += ["--judge", "openai:fake-judge", "--out-dir", str(tmp_path)]
    assert main([*args, "--plan"]) == 0
    out = capsys.readouterr().out
    assert "total: 12 requests" in out and "price unknown: gemini fake-pro" in out  # never $0
    assert calls(servers) == 0
    assert main(args) == 2  # without --plan the missing keys stop it before any call
    assert "GEMINI_API_KEY" in capsys.readouterr().err and calls(servers) == 0

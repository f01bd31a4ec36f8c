"""`answer --plan` and the cost of answer runs, against the fake Gemini and OpenAI-compatible servers on the
hub fixtures: planned calls equal the calls the fakes see, a finished run plans nothing, spend carries USD.

The fake OpenAI-compatible server is a server of your own at OPENAI_BASE_URL (a vLLM replica: "self-hosted: no
price", issue 30 item 8) unless a test makes it stand in for api.openai.com (OPENAI_DEFAULT_BASE_URL)."""

from __future__ import annotations

import json
import re

import pytest

import test_vidore_answer
from evals_repro.base.io import read_jsonl
from evals_repro.cli import main
from evals_repro.planning.answer import plan_answer
from evals_repro.vidore_paper.answer import run_answer
from evals_repro.vidore_paper.contexts import Pipeline
from test_vidore_answer import QUIET, panel, pipeline_request

# the answer tests' fixtures: the fake hub with the hr and energy domains, and the fake LLM servers
hub, servers = test_vidore_answer.hub, test_vidore_answer.servers
SELF_HOSTED = "self-hosted: no price"
WHERE = ["answer", "-s", "hr", "-s", "energy", "--oracle"]  # hr: 2 queries, energy: 1 (the oracle needs no retrieval)


def at_openai(servers, monkeypatch) -> None:
    """The fake OpenAI-compatible server stands in for api.openai.com (OPENAI_BASE_URL is OpenAI's own)."""
    monkeypatch.setattr("evals_repro.providers.clients.OPENAI_DEFAULT_BASE_URL", servers["env"]["OPENAI_BASE_URL"])


def price_file(tmp_path, *models: tuple[str, str]):
    """$1 per million tokens in and out for each (provider, model), dated 2026-03-04."""
    entries = [
        {"provider": p, "model": m, "unit": u, "usd": 1.0, "per": 1_000_000}
        for p, m in models
        for u in ("input_tokens", "output_tokens")
    ]
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"date": "2026-03-04", "prices": entries}))
    return path


def spend_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(("spent this session", "run total"))]


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


def test_pipeline_plan_before_contexts_exist_and_priced_spend(servers, tmp_path, monkeypatch, capsys):
    """At OpenAI itself the judge is priced by model name, as before: unpriced, --max-cost refuses it."""
    at_openai(servers, monkeypatch)
    prices = price_file(tmp_path, ("gemini", "fake-pro"), ("openai", "fake-judge"))
    request = pipeline_request(tmp_path, Pipeline("text", retriever="bm25"))
    download(request)
    planned = plan_answer(request)
    assert any("contexts not built yet" in note for note in planned.notes)
    args = ["answer", "-s", "hr", "-s", "energy", "--retriever", "bm25", "--generator", "gemini:fake-pro"]
    args += ["--judge", "openai:fake-judge", "--out-dir", str(tmp_path)]
    assert main([*args, "--max-cost", "0.01"]) == 2  # the shipped table prices neither fake model
    err = capsys.readouterr().err
    assert "price unknown" in err and "openai fake-judge (input_tokens)" in err and calls(servers) == 0
    args += ["--prices", str(prices)]
    assert main(args) == 0
    assert planned.requests == calls(servers) == 6
    result = json.loads(next((tmp_path / "answer").glob("*/result.json")).read_text())
    total = result["spend"]["total"]
    # $1 per million tokens in and out, both models: the cost is what the fakes reported / 1e6
    tokens_in, tokens_out = test_vidore_answer.reported(servers["gemini"], servers["openai"])
    assert total["cost_usd"] == pytest.approx((tokens_in + tokens_out) / 1e6)
    assert total["prices_date"] == "2026-03-04" and total["self_hosted"] == [] and total["price_unknown"] == []
    run_dir = next((tmp_path / "answer").glob("*/"))
    assert not any(r.get("self_hosted") for r in read_jsonl(run_dir / "verdicts.jsonl"))
    assert SELF_HOSTED not in capsys.readouterr().err
    assert main([*args, "--plan"]) == 0
    assert SELF_HOSTED not in capsys.readouterr().out
    assert plan_answer(request).requests == 0


def test_a_generator_and_judge_on_a_server_of_your_own_are_self_hosted_everywhere(servers, tmp_path, capsys):
    """OPENAI_BASE_URL is the fake, a server of your own: the plan, --max-cost, the spend lines, result.json and
    each call's record say "self-hosted: no price", never "price unknown"."""
    args = [*WHERE, "--generator", "openai:fake-oss", "--judge", "openai:fake-judge", "--out-dir", str(tmp_path)]
    download(pipeline_request(tmp_path, Pipeline("text", oracle=True)))
    assert main([*args, "--plan"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("openai ")]
    assert len(rows) == 2 and all(row.endswith(SELF_HOSTED) for row in rows), out  # generation, judge
    # 3 queries: 3 answers and 3 verdicts
    assert f"total: 6 requests, cost {SELF_HOSTED} (prices of " in out and "price unknown" not in out
    assert calls(servers) == 0
    assert main([*args, "--max-cost", "0.01"]) == 0  # it bills nothing: neither the plan nor a call is refused
    err = capsys.readouterr().err
    assert calls(servers) == 6 and "price unknown" not in err
    spent = spend_lines(err)
    assert len(spent) == 2 and all(line.endswith(f", cost {SELF_HOSTED}") for line in spent), err
    run_dir = next((tmp_path / "answer").glob("*/"))
    result = json.loads((run_dir / "result.json").read_text())
    tokens_in, _ = test_vidore_answer.reported(servers["openai"])
    for block in (result["spend"]["total"], result["spend"]["this_session"]):
        assert block["tokens_in"] == tokens_in  # counted all the same
        assert block["cost"] == SELF_HOSTED and block["cost_usd"] == 0 and block["price_unknown"] == []
        assert block["self_hosted"] == ["openai fake-judge", "openai fake-oss"]
    assert result["spend"]["total"]["by_model"]["openai:fake-oss"]["self_hosted"] == ["openai fake-oss"]
    records = read_jsonl(run_dir / "answers.jsonl") + read_jsonl(run_dir / "verdicts.jsonl")
    assert len(records) == 6 and all(r["self_hosted"] is True for r in records)


def test_a_priced_generator_beside_a_judge_of_your_own_costs_the_generator_plus_self_hosted(servers, tmp_path, capsys):
    prices = price_file(tmp_path, ("gemini", "fake-pro"), ("openai", "fake-judge"))  # your own: never priced
    args = [*WHERE, "--generator", "gemini:fake-pro", "--judge", "openai:fake-judge", "--out-dir", str(tmp_path)]
    args += ["--prices", str(prices)]
    download(pipeline_request(tmp_path, Pipeline("text", oracle=True)))
    assert main([*args, "--plan"]) == 0
    out = capsys.readouterr().out
    (judge,) = [line for line in out.splitlines() if line.startswith("openai ")]
    (generation,) = [line for line in out.splitlines() if line.startswith("gemini ")]
    assert judge.endswith(SELF_HOSTED) and re.search(r"\$[0-9.e-]+", generation) and SELF_HOSTED not in generation
    assert re.search(rf"^total: 6 requests, cost \$[0-9.e-]+ \+ {SELF_HOSTED}.* \(prices of 2026-03-04", out, re.M), out
    assert main([*args, "--max-cost", "0.01"]) == 0
    spent = spend_lines(capsys.readouterr().err)
    assert len(spent) == 2
    assert all(re.search(rf", cost \$[0-9.e-]+ \+ {SELF_HOSTED} \(prices of 2026-03-04\)$", line) for line in spent)
    total = json.loads(next((tmp_path / "answer").glob("*/result.json")).read_text())["spend"]["total"]
    # $1 per million tokens in and out for the generator; the judge's tokens cost nothing
    tokens_in, tokens_out = test_vidore_answer.reported(servers["gemini"])
    assert total["cost_usd"] == pytest.approx((tokens_in + tokens_out) / 1e6)
    assert total["self_hosted"] == ["openai fake-judge"] and total["price_unknown"] == []


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

"""Self-hosted work worded one way everywhere (issue 30 item 8), and `evals-repro prices` with OpenAI's embedding
models priced and a bad `--prices` file refused in one line (item 9).

Expected dollars are the fakes' own token counts times the published price, computed here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evals_repro.cli import main
from evals_repro.providers.prices import reset_prices
from fakes.base import count_tokens
from fakes.openai_compat import FakeOpenAICompatible
from fakes.voyage import FakeVoyage

EMBED = "intfloat/e5-small-v2"
RERANK = "BAAI/bge-reranker-v2-m3"
SELF_HOSTED = "self-hosted: no price"
SHIPPED = json.loads((Path(__file__).resolve().parents[1] / "src/evals_repro/providers/prices.json").read_text())


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    reset_prices()
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_BASE_URLS", "RERANK_API_BASE_URL", "RERANK_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield
    reset_prices()


def where(tmp_path) -> list[str]:
    dirs = ["--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")]
    return ["-b", "sample", "-s", "heat-pumps", *dirs]


def record_of(tmp_path, method: str) -> dict:
    from evals_repro.records.results import result_path

    return json.loads(result_path(tmp_path / "r", "sample", method, "heat-pumps").read_text())


# -- item 8 --------------------------------------------------------------------------------------------------


def test_self_hosted_work_reads_the_same_in_plan_spend_record_report_and_html(monkeypatch, tmp_path, capsys):
    embed, rerank = f"openai:{EMBED}", f"bm25+rerank-api:{RERANK}@20"
    mixed = f"voyage-4-lite+rerank-api:{RERANK}@20"  # a paid first stage under a reranker of your own
    with (
        FakeOpenAICompatible(EMBED) as e,
        FakeOpenAICompatible(RERANK, max_model_len=100_000) as r,
        FakeVoyage() as voyage,
    ):
        monkeypatch.setenv("VOYAGE_API_KEY", "test-voyage-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", voyage.url + "/v1")
        for method, extra in (
            (embed, ["--base-url", f"{e.url}/v1"]),
            (rerank, ["--rerank-base-url", r.url]),
            (mixed, ["--rerank-base-url", r.url]),
        ):
            args = ["run", method, *where(tmp_path), *extra]
            assert main([*args, "--plan"]) == 0
            out = capsys.readouterr().out
            own = [line for line in out.splitlines() if line.startswith(("openai ", "rerank-api "))]
            assert own and all(line.endswith(SELF_HOSTED) for line in own), out
            total = next(line for line in out.splitlines() if line.startswith("total"))
            assert f" + {SELF_HOSTED}" in total if method == mixed else f"cost {SELF_HOSTED} " in total
            assert main(args) == 0
            spent = capsys.readouterr().err.splitlines()[-1]
            assert (
                f" + {SELF_HOSTED} (prices of " in spent if method == mixed else spent.endswith(f"cost {SELF_HOSTED}")
            )
        voyage_tokens = sum(count_tokens(text) for request in voyage.requests for text in request.json["input"])
    paid = voyage_tokens * 0.02 / 1_000_000  # the shipped voyage-4-lite price, $0.02 per 1M tokens
    for method, model, usd in ((embed, f"openai {EMBED}", 0.0), (rerank, f"rerank-api {RERANK}", 0.0)):
        cost = record_of(tmp_path, method)["cost"]
        assert cost["self_hosted"] == [model] and cost["usd"] == usd and cost["billed"] == {}
    cost = record_of(tmp_path, mixed)["cost"]
    assert cost["self_hosted"] == [f"rerank-api {RERANK}"] and cost["usd"] == pytest.approx(paid)
    results = ["-b", "sample", "--results-dir", str(tmp_path / "r")]
    assert main(["report", *results, "--cost"]) == 0
    table = capsys.readouterr().out
    for method in (embed, rerank):
        assert re.search(rf"\| {re.escape(method)} \|.*\| {SELF_HOSTED} \|", table), table
    assert re.search(rf"\| {re.escape(mixed)} \|.*\| \$[0-9.e-]+ \+ {SELF_HOSTED} \|", table), table
    assert "not recorded" not in table
    assert main(["report", *results, "-o", str(tmp_path / "report.html")]) == 0
    page = (tmp_path / "report.html").read_text()
    for method in (embed, rerank):
        assert re.search(rf"spent by {re.escape(method)}</t[hd]>\s*<td>{SELF_HOSTED} \(", page), page


# -- item 9 --------------------------------------------------------------------------------------------------


def test_prices_lists_every_price_with_its_page_and_dates_and_what_has_no_price(capsys):
    assert main(["prices"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"prices of {SHIPPED['date']} (the shipped table)")
    known, unknown = out.split("\nprice unknown")
    for entry in SHIPPED["prices"]:
        row = next(
            (
                line
                for line in known.splitlines()
                if line.split()[:3] == [entry["provider"], entry["model"], entry["unit"]]
            ),
            None,
        )
        assert row is not None, entry
        for field in ("read", "read_on", "source"):
            assert entry[field] in row, (field, row)
        listed = f"  {entry['provider']} {entry['model']} ({entry['unit']})"
        assert listed not in unknown  # a priced unit is not listed as unknown
    # what the built-in methods bill without a price in the shipped table
    assert "  voyage rerank-3 (input_tokens): +voyage:rerank-3" in unknown
    assert "  mixedbread store (store_image_pages): " in unknown
    assert f"{SELF_HOSTED}: openai:<model> at a --base-url of your own, +rerank-api:<model>" in unknown


def test_a_price_file_adds_to_the_list_and_prices_what_was_unknown(tmp_path, capsys):
    entry = {"provider": "voyage", "model": "rerank-3", "unit": "input_tokens", "usd": 0.05, "source": "https://x"}
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"date": "2027-01-01", "prices": [entry]}))
    assert main(["prices", "--prices", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"prices of 2027-01-01 ({path} over the shipped table)")
    known, unknown = out.split("\nprice unknown")
    assert re.search(r"^voyage +rerank-3 +input_tokens +\$0.05 per 1M +not given +not given +https://x$", known, re.M)
    assert "voyage rerank-3" not in unknown


@pytest.mark.parametrize("command", [["prices"], ["run", "voyage-4-lite", "-b", "sample", "--plan"]])
def test_a_price_file_that_is_not_utf8_is_one_line_exit_2(command, tmp_path, capsys):
    path = tmp_path / "latin1.json"
    data = b'{"date": "2026-01-01", "prices": [{"provider": "voyage", "model": "caf\xe9"}]}'  # Latin-1
    path.write_bytes(data)
    assert main([*command, "--prices", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: --prices {path}: not UTF-8 text (byte 0xe9 at offset {data.index(0xE9)}): save the price file "
        "as UTF-8 JSON, "
        "like the shipped prices.json"
    )


def test_openai_embedding_models_are_priced_in_plan_and_record(monkeypatch, tmp_path, capsys):
    """`openai:text-embedding-3-small --plan` was "price unknown". The fake stands in for api.openai.com."""
    with FakeOpenAICompatible("text-embedding-3-small") as fake:
        monkeypatch.setattr("evals_repro.providers.clients.OPENAI_DEFAULT_BASE_URL", f"{fake.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")
        args = ["run", "openai:text-embedding-3-small", *where(tmp_path), "--base-url", f"{fake.url}/v1"]
        assert main([*args, "--plan"]) == 0
        out = capsys.readouterr().out
        assert "price unknown" not in out and SELF_HOSTED not in out
        assert main(args) == 0
        tokens = sum(len(fake.tokens(text)) for batch in fake.embed_inputs for text in batch)
    cost = record_of(tmp_path, "openai:text-embedding-3-small")["cost"]
    assert cost["billed"] == {"openai text-embedding-3-small": {"input_tokens": tokens}}
    assert cost["usd"] == pytest.approx(tokens * 0.02 / 1_000_000)  # OpenAI's $0.02 per 1M tokens

"""Money: the shipped price table, `--prices` overrides, the cost of what a run billed (result record,
spend line, `report --cost`), and "price unknown" never counted as free.

Expected dollars are computed here from the fake's own token counts (what the provider reported) times
a round test price, never read back from the code under test."""

from __future__ import annotations

import json

import pytest

from evals_repro.base.errors import DataError
from evals_repro.cli import main
from evals_repro.providers.prices import UNITS, load_prices, reset_prices, usd_text
from fakes.base import Reply, Request, count_tokens, route
from fakes.voyage import FakeVoyage


@pytest.fixture(autouse=True)
def _shipped_prices():
    reset_prices()
    yield
    reset_prices()


def write_prices(path, entries, date="2026-01-01"):
    path.write_text(json.dumps({"date": date, "prices": entries}))
    return path


def test_shipped_table_names_a_page_and_a_date_for_every_price():
    table = load_prices()
    assert table.date and table.source == "shipped"
    assert len(table.prices) >= 20
    for price in table.prices.values():
        assert price.source.startswith("https://"), price
        assert price.read, price
        assert price.unit in UNITS and price.usd > 0 and price.per > 0
    # the models the seed's reproductions pay for
    for provider, model, unit in [
        ("voyage", "voyage-4-large", "input_tokens"),
        ("voyage", "voyage-multimodal-3.5", "pixels"),
        ("cohere", "embed-v4.0", "input_tokens"),
        ("cohere", "rerank-v4.0-pro", "searches"),
        ("gemini", "gemini-embedding-2", "input_tokens"),
        ("mixedbread", "mixedbread-ai/mxbai-rerank-large-v2", "input_tokens"),
    ]:
        assert table.price(provider, model, unit) is not None, (provider, model, unit)


def test_cost_arithmetic_and_price_unknown_never_zero(tmp_path):
    path = write_prices(
        tmp_path / "p.json",
        [{"provider": "voyage", "model": "voyage-4-lite", "unit": "input_tokens", "usd": 0.02, "per": 1_000_000}],
    )
    table = load_prices(path)
    # 3,000,000 tokens at $0.02 per million = $0.06; 250 searches of a model the file leaves out stay unknown
    costing = table.cost(
        {("voyage", "voyage-4-lite", "input_tokens"): 3_000_000, ("acme", "rerank-x", "searches"): 250}
    )
    assert costing.usd == pytest.approx(0.06)
    assert costing.unknown == ["acme rerank-x (searches)"]
    assert costing.as_dict()["usd"] is None  # never 0 or the priced part alone
    assert costing.by_model == {"voyage voyage-4-lite": pytest.approx(0.06), "acme rerank-x": None}
    assert "price unknown: acme rerank-x (searches)" in costing.text()
    assert table.date == "2026-01-01"  # the override's date is the one the cost is stamped with
    assert usd_text(1234.567) == "$1,234.57" and usd_text(0.000123) == "$0.000123"


def test_bad_price_file_is_one_clear_line(tmp_path):
    bad = write_prices(tmp_path / "bad.json", [{"provider": "voyage", "model": "m", "unit": "tokens", "usd": 1}])
    with pytest.raises(DataError, match=r"prices\[0\]: unknown unit 'tokens'"):
        load_prices(bad)
    with pytest.raises(DataError, match="cannot read"):
        load_prices(tmp_path / "missing.json")


def fake_tokens(fake) -> int:
    """What the fake reported: its own count of every text it embedded."""
    return sum(count_tokens(text) for r in fake.requests for text in r.json["input"])


def test_run_records_cost_and_report_adds_a_cost_column(monkeypatch, tmp_path, capsys):
    prices = write_prices(
        tmp_path / "prices.json",
        [{"provider": "voyage", "model": "voyage-4-lite", "unit": "input_tokens", "usd": 1.0, "per": 1000}],
        date="2026-02-03",
    )
    results = tmp_path / "results"
    with FakeVoyage() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "test-voyage-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        args = ["run", "voyage-4-lite", "-b", "sample", "-s", "heat-pumps", "--results-dir", str(results)]
        args += ["--cache-dir", str(tmp_path / "cache"), "--prices", str(prices)]
        assert main(args) == 0
        expected = fake_tokens(fake) / 1000  # $1 per 1,000 tokens
    record = json.loads((results / "sample/voyage-4-lite/heat-pumps.json").read_text())
    assert record["cost"]["usd"] == pytest.approx(expected)
    assert record["cost"]["prices_date"] == "2026-02-03"
    assert record["cost"]["billed"] == {"voyage voyage-4-lite": {"input_tokens": fake_tokens(fake)}}
    err = capsys.readouterr().err
    assert f"cost {usd_text(expected)} (prices of 2026-02-03)" in err
    assert main(["report", "-b", "sample", "--results-dir", str(results), "--cost"]) == 0
    out = capsys.readouterr().out
    assert "cost (USD)" in out and f"| {usd_text(expected)} |" in out


def test_a_price_file_overrides_and_adds_but_a_missing_model_stays_unknown(tmp_path):
    path = write_prices(
        tmp_path / "p.json",
        [
            {"provider": "voyage", "model": "voyage-4-large", "unit": "input_tokens", "usd": 1, "per": 1000},
            {"provider": "acme", "model": "embed-1", "unit": "input_tokens", "usd": 2, "per": 1000},
        ],
    )
    table = load_prices(path)
    assert table.price("voyage", "voyage-4-large", "input_tokens").usd == 1  # overridden
    assert table.price("voyage", "voyage-4", "input_tokens").usd == 0.06  # shipped, kept
    costing = table.cost({("acme", "embed-1", "input_tokens"): 500, ("voyage", "voyage-9", "input_tokens"): 10})
    assert costing.usd == pytest.approx(1.0)
    assert costing.text() == "$1.00 + price unknown: voyage voyage-9 (input_tokens)"


# -- run --plan and --max-cost against the fake -------------------------------------------------------


def voyage_env(monkeypatch, fake):
    monkeypatch.setenv("VOYAGE_API_KEY", "test-voyage-key")
    monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")


def sample_request(tmp_path, **kwargs):
    from evals_repro.runner.run_request import RunRequest

    return RunRequest(
        method="voyage-4-lite", benchmark="sample", results_dir=tmp_path / "r", cache_dir=tmp_path / "c", **kwargs
    )


def test_plan_needs_no_key_and_counts_the_requests_the_fake_then_sees(monkeypatch, tmp_path, capsys):
    from evals_repro.planning.run import plan_run

    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    args = ["run", "voyage-4-lite", "-b", "sample", "--results-dir", str(tmp_path / "r")]
    args += ["--cache-dir", str(tmp_path / "c"), "--plan"]
    assert main(args) == 0  # no key, nothing sent, nothing written
    out = capsys.readouterr().out
    assert "voyage-4-lite" in out and "pages" in out and "queries" in out and "total:" in out
    assert not (tmp_path / "r").exists() and not (tmp_path / "c").exists()
    planned = plan_run(sample_request(tmp_path))
    with FakeVoyage() as fake:
        voyage_env(monkeypatch, fake)
        assert main(args[:-1]) == 0
        sent = [len(r.json["input"]) for r in fake.requests]
    assert planned.requests == len(sent)
    assert sum(line.items for line in planned.lines.values()) == sum(sent)
    warm = plan_run(sample_request(tmp_path))  # every vector cached: nothing to send, nothing to pay
    assert warm.requests == 0 and warm.billed() == {}
    assert sum(line.held for line in warm.lines.values()) == sum(sent)
    kept = plan_run(sample_request(tmp_path, resume=True))
    assert kept.requests == 0 and kept.lines == {}


def test_a_plan_that_cannot_load_a_subset_says_incomplete_and_max_cost_refuses_it(monkeypatch, tmp_path):
    from evals_repro.base.errors import UsageError
    from evals_repro.planning.run import plan_run
    from evals_repro.providers.ceiling import check_ceiling

    # the first subset's data cannot be loaded (as with the Hub unreachable): the rest is planned, the total
    # says the plan is incomplete, and no ceiling passes it, however high
    monkeypatch.setattr("evals_repro.benchmarks.load_subset", _refuse_first_subset())
    planned = plan_run(sample_request(tmp_path))
    assert planned.incomplete == "1 of 3 subsets not planned"
    assert planned.requests > 0  # the other subsets are planned
    text = planned.render(load_prices())
    total = next(line for line in text.splitlines() if line.startswith("total"))
    assert total.startswith("total (incomplete: 1 of 3 subsets not planned, see the notes): ")
    assert "note: heat-pumps: not planned: its data could not be loaded (heat-pumps is not in the local cache" in text
    with pytest.raises(UsageError, match=r"the plan is incomplete \(1 of 3 subsets not planned"):
        check_ceiling(planned, load_prices(), 1_000_000.0)


def _refuse_first_subset():
    from evals_repro.base.errors import ConfigurationError
    from evals_repro.benchmarks import load_subset as real

    def load(decl, name, options):
        if name == decl.subset_names[0]:
            raise ConfigurationError(f"{name} is not in the local cache", "download it")
        return real(decl, name, options)

    return load


def test_max_cost_refuses_to_start_over_the_plan(monkeypatch, tmp_path, capsys):
    with FakeVoyage() as fake:
        voyage_env(monkeypatch, fake)
        args = ["run", "voyage-4-lite", "-b", "sample", "--results-dir", str(tmp_path / "r")]
        args += ["--cache-dir", str(tmp_path / "c"), "--max-cost", "0.00001"]
        assert main(args) == 2
        assert fake.requests == []
    err = capsys.readouterr().err
    assert "over --max-cost $1.00e-05" in err and "--plan" in err


def test_max_cost_stops_mid_run_and_resume_pays_for_nothing_twice(monkeypatch, tmp_path):
    from evals_repro.planning.run import plan_run
    from evals_repro.providers.ceiling import CostCeilingReached, CostGuard, install_guard
    from evals_repro.providers.prices import current_prices
    from evals_repro.runner.evaluation import run_benchmark

    with FakeVoyage() as fake:
        voyage_env(monkeypatch, fake)
        cold = FakeVoyage()
        first = sample_request(tmp_path, subsets=["heat-pumps"])
        # room for the first subset's requests at what the guard reserves for them (the throttle's
        # upper-leaning estimate, not the plan's first guess) and no more
        with monkeypatch.context() as m:
            m.setattr("evals_repro.embedders.api.text_prior", lambda texts: None)
            ceiling = plan_run(first).costing(current_prices()).usd * 1.0001
        install_guard(CostGuard(ceiling, current_prices()))
        try:
            with pytest.raises(CostCeilingReached, match="stopped before a voyage voyage-4-lite request"):
                run_benchmark(sample_request(tmp_path, subsets=["heat-pumps", "railway-maintenance"]))
        finally:
            install_guard(None)
        stopped = len(fake.requests)
        assert stopped == 2  # the first subset's pages and queries; the second subset's pages were refused
        assert (tmp_path / "r/sample/voyage-4-lite/heat-pumps.json").exists()
        summary = run_benchmark(sample_request(tmp_path, subsets=["heat-pumps", "railway-maintenance"], resume=True))
        assert [o.status for o in summary.outcomes] == ["skipped", "written"]
        resumed = len(fake.requests)
    with cold:  # the same two subsets from nothing: the stopped run plus its resume sent exactly this much
        voyage_env(monkeypatch, cold)
        run_benchmark(sample_request(tmp_path / "cold", subsets=["heat-pumps", "railway-maintenance"]))
        assert resumed == len(cold.requests)


def test_a_plan_after_a_run_is_scaled_by_the_tokens_the_provider_reported(monkeypatch, tmp_path):
    """A first plan guesses text at 0.75 words a token (the fakes count 1.3 tokens a word, so it lands within
    10%; the throttle's chars / 3 was 1.54x); a run saves what the provider counted, and the next plan of
    other subsets lands within 10% of what the fake then reports (measured: 1.03x cold, 1.09x scaled)."""
    from evals_repro.planning.run import plan_run
    from evals_repro.runner.evaluation import run_benchmark

    def reported(requests):
        return sum(count_tokens(text) for r in requests for text in r.json["input"])

    with FakeVoyage() as fake:
        voyage_env(monkeypatch, fake)
        first = sample_request(tmp_path, subsets=["heat-pumps"])
        cold = plan_run(first)
        run_benchmark(first)
        assert abs(sum(line.tokens for line in cold.lines.values()) / reported(fake.requests) - 1) < 0.10
        assert (tmp_path / "c/token-ratios.json").exists()
        rest = sample_request(tmp_path, subsets=["railway-maintenance", "clinical-trials"])
        planned = plan_run(rest)
        sent = len(fake.requests)
        run_benchmark(rest)
        actual = reported(fake.requests[sent:])
        assert planned.requests == len(fake.requests) - sent
        assert abs(sum(line.tokens for line in planned.lines.values()) / actual - 1) < 0.10


# -- mixedbread-upload --plan ------------------------------------------------------------------------------


def test_upload_plan_counts_uploads_and_attachments_then_nothing_once_stored(monkeypatch, tmp_path, capsys):
    import re

    from beir_folder import write_beir_folder
    from evals_repro.planning.upload import plan_upload
    from fakes.mixedbread_store import FakeMixedbreadStores

    pages = {"p1": "solar panels on roofs", "p2": "wind turbines at sea", "p3": "battery storage", "p4": "   "}
    folder = write_beir_folder(tmp_path / "mini", pages, {"q1": "solar"}, [("q1", "p1", 1)])
    cache = tmp_path / "c"
    monkeypatch.delenv("MXBAI_API_KEY", raising=False)
    args = ["mixedbread-upload", "markdown", "--benchmark", folder, "--cache-dir", str(cache)]
    assert main([*args, "--plan"]) == 0  # no key needed
    assert "mixedbread  store" in capsys.readouterr().out
    planned = plan_upload(folder, "markdown", cache_dir=cache)
    with FakeMixedbreadStores(polls_to_complete=1) as fake:
        monkeypatch.setenv("MIXEDBREAD_BASE_URL", fake.url)
        monkeypatch.setenv("MXBAI_API_KEY", "test-key")
        assert main(args) == 0
        paid = [
            r for r in fake.requests if r.method == "POST" and re.fullmatch(r"/v1/(files|stores/[^/]+/files)", r.path)
        ]
    assert planned.requests == len(paid) == 6  # three pages with text: an upload and an attachment each
    # indexing is billed on what the store indexes: the pages' text tokens at the fast rate
    # (Mixedbread reports no count: 0.75 words a token, rounded up: 4, 4 and 2 words -> 6 + 6 + 3)
    assert planned.billed() == {("mixedbread", "store", "store_tokens"): 15}
    # a first guess no run can calibrate: a token a word (4 + 4 + 2) up to 3 characters a token, rounded up
    # (21, 20 and 15 characters: 7 + 7 + 5); --max-cost holds the top
    assert planned.billed("low") == {("mixedbread", "store", "store_tokens"): 10}
    assert planned.billed("high") == {("mixedbread", "store", "store_tokens"): 19}
    out = capsys.readouterr().out
    assert "spent: " in out and "cost $" in out
    again = plan_upload(folder, "markdown", cache_dir=cache)
    assert again.requests == 0 and again.billed() == {}


# -- plan accuracy per provider: requests exact, tokens within 10% once calibrated --------------------------


def _fake_reported(kind: str, fake) -> int:
    """The tokens each fake reported, recomputed from the requests it received with its own tokenizer."""
    from fakes.gemini import content_text

    total = 0
    for r in fake.requests:
        body = r.json if r.body else {}
        if kind == "cohere" and r.path.endswith("/embed"):
            total += sum(count_tokens(t) for t in body["texts"])
        elif kind == "gemini" and r.path.endswith(":batchEmbedContents"):
            total += sum(count_tokens(content_text(q["content"])) for q in body["requests"])
    return total


@pytest.mark.parametrize(
    ("method", "kind", "env"),
    [
        ("cohere-embed-v4.0", "cohere", {"CO_API_URL": "{url}", "COHERE_API_KEY": "k"}),
        ("gemini-embedding-2", "gemini", {"GOOGLE_GEMINI_BASE_URL": "{url}", "GEMINI_API_KEY": "k"}),
    ],
)
def test_plan_accuracy_for_cohere_and_gemini_embeddings(method, kind, env, monkeypatch, tmp_path):
    from evals_repro.planning.run import plan_run
    from evals_repro.runner.evaluation import run_benchmark
    from evals_repro.runner.run_request import RunRequest
    from fakes.cohere import FakeCohere
    from fakes.gemini import FakeGemini

    def request(subsets):
        return RunRequest(
            method=method, benchmark="sample", subsets=subsets, results_dir=tmp_path / "r", cache_dir=tmp_path / "c"
        )

    with FakeCohere() if kind == "cohere" else FakeGemini() as fake:
        for key, value in env.items():
            monkeypatch.setenv(key, value.format(url=fake.url))
        first = request(["heat-pumps"])
        cold = plan_run(first)
        run_benchmark(first)
        assert cold.requests == len(fake.requests)
        reported = _fake_reported(kind, fake)
        assert abs(sum(line.tokens for line in cold.lines.values()) / reported - 1) < 0.10
        # and inside the first guess's range (a token a word up to 3 characters a token)
        assert sum(li.tokens_low for li in cold.lines.values()) <= reported
        assert reported <= sum(li.tokens_high for li in cold.lines.values())
        fake.requests.clear()
        rest = request(["railway-maintenance", "clinical-trials"])
        planned = plan_run(rest)
        run_benchmark(rest)
        assert planned.requests == len(fake.requests)
        ratio = sum(line.tokens for line in planned.lines.values()) / _fake_reported(kind, fake)
        assert abs(ratio - 1) < 0.10, ratio


def test_plan_of_a_reranked_run_counts_one_rerank_request_per_query(monkeypatch, tmp_path):
    from evals_repro.planning.run import plan_run
    from evals_repro.runner.evaluation import run_benchmark
    from evals_repro.runner.run_request import RunRequest
    from fakes.rerankers import FakeCohereRerank, count_requests

    with FakeCohereRerank() as fake:
        monkeypatch.setenv("CO_API_URL", fake.url)
        monkeypatch.setenv("COHERE_API_KEY", "k")
        request = RunRequest(
            method="bm25+cohere@20", benchmark="sample", results_dir=tmp_path / "r", cache_dir=tmp_path / "c"
        )
        planned = plan_run(request)
        summary = run_benchmark(request)
        assert planned.requests == count_requests(fake, "POST", "/v2/rerank")
        # each query's 20 candidates are one search unit; the record's cost is the searches at the table's price
        price = current_price("cohere", "rerank-v4.0-pro", "searches")
        for outcome in summary.outcomes:
            record = json.loads(outcome.path.read_text())
            queries = record["n_queries"]
            assert record["cost"]["billed"] == {"cohere rerank-v4.0-pro": {"searches": queries}}
            assert record["cost"]["usd"] == pytest.approx(queries * price.usd / price.per)


def current_price(provider, model, unit):
    from evals_repro.providers.prices import current_prices

    return current_prices().price(provider, model, unit)


# -- ViDoRe page images on the fake hub ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hub(fake_hub):
    import hub_fixtures as fx

    return fx.install(fake_hub)


def test_plan_of_vidore_page_images_counts_requests_items_and_billed_pixels(hub, monkeypatch, tmp_path):
    import io

    from PIL import Image

    from evals_repro.benchmarks import LoadOptions, get_benchmark, load_subset
    from evals_repro.planning.run import plan_run
    from evals_repro.runner.evaluation import run_benchmark
    from evals_repro.runner.run_request import RunRequest

    request = RunRequest(
        method="voyage-multimodal-3.5", benchmark="vidore-v3", subsets=["hr"], content="images",
        results_dir=tmp_path / "r", cache_dir=tmp_path / "c",
    )  # fmt: skip
    subset = load_subset(get_benchmark("vidore-v3"), "hr", LoadOptions(content="images", cache_dir=tmp_path / "c"))
    sizes = [Image.open(io.BytesIO(page.image)).size for page in subset.pages]
    planned = plan_run(request)
    pages = planned.lines[("voyage", "voyage-multimodal-3.5", "pages")]
    # Voyage bills an image as at least 50,000 and at most 2,000,000 pixels
    assert pages.units["pixels"] == sum(min(2_000_000, max(50_000, w * h)) for w, h in sizes)
    assert pages.items == len(subset.pages)
    with FakeVoyage() as fake:
        voyage_env(monkeypatch, fake)
        run_benchmark(request)
        sent = [len(r.json["inputs"]) for r in fake.requests]
    assert planned.requests == len(sent)
    assert sum(line.items for line in planned.lines.values()) == sum(sent)
    record = json.loads((tmp_path / "r/vidore-v3/voyage-multimodal-3.5[images]/hr.json").read_text())
    # the record bills what the fake reported: 1,000 pixels an image (the fake's count), text tokens beside
    assert record["cost"]["billed"]["voyage voyage-multimodal-3.5"]["pixels"] == 1000 * len(subset.pages)


def test_max_cost_refuses_a_plan_whose_price_is_unknown(tmp_path):
    from evals_repro.base.errors import UsageError
    from evals_repro.providers.ceiling import check_ceiling
    from evals_repro.providers.plan import Plan

    plan = Plan()
    plan.add("openai", "Qwen/Qwen3-VL", "generation", requests=3, items=3, units={"input_tokens": 900})
    with pytest.raises(UsageError, match=r"price unknown: openai Qwen/Qwen3-VL \(input_tokens\)") as raised:
        check_ceiling(plan, load_prices(), 5.0)
    assert "--prices" in raised.value.hint
    priced = write_prices(
        tmp_path / "p.json", [{"provider": "openai", "model": "Qwen/Qwen3-VL", "unit": "input_tokens", "usd": 0}]
    )
    check_ceiling(plan, load_prices(priced), 5.0)  # a local replica priced at $0 by the user passes


def test_upload_stopped_by_max_cost_resumes_without_uploading_twice(monkeypatch, tmp_path):
    import re

    from beir_folder import write_beir_folder
    from evals_repro.providers.ceiling import CostCeilingReached, CostGuard, install_guard
    from evals_repro.providers.prices import current_prices
    from evals_repro.stores.upload import upload_benchmark
    from fakes.mixedbread_store import FakeMixedbreadStores

    pages = {f"p{i}": f"page {i} about solar panels and wind turbines" for i in range(4)}
    folder = write_beir_folder(tmp_path / "mini", pages, {"q1": "solar"}, [("q1", "p1", 1)])
    price = current_prices().price("mixedbread", "store", "store_tokens")
    each = price.cost(11)  # every page: 8 words at 0.75 words a token, rounded up
    with FakeMixedbreadStores(polls_to_complete=1) as fake:
        monkeypatch.setenv("MIXEDBREAD_BASE_URL", fake.url)
        monkeypatch.setenv("MXBAI_API_KEY", "test-key")
        install_guard(CostGuard(2.5 * each, current_prices()))  # room for two attachments
        try:
            with pytest.raises(CostCeilingReached):
                upload_benchmark(folder, "markdown", workers=1, cache_dir=tmp_path / "c")
        finally:
            install_guard(None)
        attached = [r for r in fake.requests if r.method == "POST" and re.fullmatch(r"/v1/stores/[^/]+/files", r.path)]
        assert len(attached) == 2
        upload_benchmark(folder, "markdown", workers=1, cache_dir=tmp_path / "c")
        uploads = [r for r in fake.requests if r.method == "POST" and r.path == "/v1/files"]
        assert len(uploads) == len(pages)  # the page refused its attachment was uploaded once, attached on resume
        assert sorted(f["external_id"] for f in fake.store_files("mini-eval-mini-markdown")) == sorted(pages)


def test_plan_of_an_embedder_under_a_reranker_needs_no_key(monkeypatch, tmp_path, capsys):
    for variable in ("VOYAGE_API_KEY", "COHERE_API_KEY", "CO_API_KEY", "GEMINI_API_KEY", "MXBAI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)  # no .env around
    args = ["run", "voyage-4-lite+cohere@20", "-b", "sample", "--results-dir", "r", "--cache-dir", "c"]
    assert main([*args, "--plan"]) == 0
    out = capsys.readouterr().out
    # 3 page requests + 3 query requests, and one rerank (one search) per query of the 78
    assert "total: 84 requests" in out and "rerank-v4.0-pro" in out and "voyage-4-lite" in out
    assert main(args) == 2  # the run itself names the missing keys before any work
    err = capsys.readouterr().err
    assert "VOYAGE_API_KEY" in err and "CO" in err
    assert not list((tmp_path / "r").rglob("*"))  # no result written (the folder itself may be made)


@pytest.mark.parametrize(
    "command", [["run"], ["rerank-study", "quality"], ["rerank-study", "latency"], ["mixedbread-upload"], ["answer"]]
)
def test_every_paid_command_shows_the_money_options_and_their_defaults(command, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    try:
        main([*command, "--help"])
    except SystemExit:
        pass
    out = capsys.readouterr().out
    assert "--plan" in out and "--prices" in out and "the shipped table" in out
    assert "--max-cost" in out and "none: no ceiling" in out


def test_a_first_plan_guesses_three_tokens_for_four_words_and_one_per_ideograph():
    from evals_repro.providers.plan import central_tokens, text_prior

    assert central_tokens("solar panels on roofs") == pytest.approx(4 / 0.75)
    assert central_tokens("l'énergie éolienne") == pytest.approx(3 / 0.75)  # \w+ counts l, énergie, éolienne
    assert central_tokens("東京 is big") == pytest.approx(2 + 2 / 0.75)
    assert central_tokens("") == 0
    # the throttle books ceil(21 / 3) = 7 for the first text: the plan scales it by (16/3) / 7, within a range
    # from a token a word (4 / 7) to the throttle's own estimate (7 / 7)
    prior = text_prior(["solar panels on roofs"])
    assert (prior.low, prior.point, prior.high) == pytest.approx((4 / 7, (4 / 0.75) / 7, 1.0))
    assert text_prior(["", None]) is None


class OverbillingVoyage(FakeVoyage):
    """Reports 2.5 times its own token count (3.25 a word, past the 3 characters a token at the top of a first
    plan's range on the sample): a provider billing more than any plan foresaw."""

    @route("POST", r"/v1/embeddings")
    def embeddings(self, request: Request) -> Reply:
        body = request.json
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return self._answer(body, texts, {"total_tokens": round(2.5 * sum(count_tokens(t) for t in texts))})


def test_the_ceiling_reached_through_the_cli_leaves_whole_units_and_free_locks(monkeypatch, tmp_path, capsys):
    """`run --max-cost` stopped by the ceiling between subsets (issues 21 and 22 together): one line, exit 2, the
    finished subset's unit whole (`evaluate --result` accepts it), nothing of the next one but its free lock, no
    ceiling left installed, and `--resume` sends only the next subset's requests."""
    import fcntl

    from evals_repro.planning.run import plan_run
    from evals_repro.providers.ceiling import current_guard
    from evals_repro.providers.prices import current_prices

    subsets = ["heat-pumps", "railway-maintenance"]
    where = ["--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")]
    args = ["run", "voyage-4-lite", "-b", "sample", "-s", ",".join(subsets), *where]
    with OverbillingVoyage() as fake:
        voyage_env(monkeypatch, fake)
        # room for the plan at the top of its range (what the gate checks), not for what the fake then bills
        ceiling = plan_run(sample_request(tmp_path, subsets=subsets)).costing(current_prices(), "high").usd * 1.01
        code = main([*args, "--max-cost", f"{ceiling:.8f}"])
        err = capsys.readouterr().err
        assert code == 2, err
        lines = [line for line in err.splitlines() if line.startswith("error: ")]
        assert len(lines) == 1 and lines[0].startswith("error: stopped before a voyage voyage-4-lite request"), err
        assert "Traceback" not in err and "heat-pumps: 26 queries" in err
        assert len(fake.requests) == 2  # heat-pumps' pages and queries; railway's pages were refused
        assert current_guard() is None
        folder = tmp_path / "r" / "sample" / "voyage-4-lite"
        assert sorted(p.name for p in folder.iterdir()) == [
            ".heat-pumps.lock",
            ".railway-maintenance.lock",
            "heat-pumps.json",
            "heat-pumps.qrels.gz",
            "heat-pumps.run.gz",
        ]
        for lock in folder.glob(".*.lock"):  # released: another run of either subset would not wait
            with open(lock, "rb") as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert main(["evaluate", "--result", str(folder / "heat-pumps.json")]) == 0
        capsys.readouterr()
        assert main([*args, "--resume", "--max-cost", "1"]) == 0
        err = capsys.readouterr().err
        assert "heat-pumps: complete result kept" in err and "railway-maintenance: 26 queries" in err
        assert len(fake.requests) == 4  # only railway-maintenance's pages and queries


@pytest.mark.parametrize("damage", ["qrels.gz missing", "run.gz replaced"])
def test_a_plan_with_resume_counts_a_result_the_run_will_recompute(monkeypatch, tmp_path, capsys, damage):
    """`run --resume` recomputes a result whose saved run or judgments are not its own (issue 22 item 1); the plan
    (and so the --max-cost gate) must count that rerun too, not call it kept. With the embedding cache gone the
    rerun pays again: the plan counts the requests the fake then sees."""
    from evals_repro.planning.run import plan_run

    with FakeVoyage() as fake:
        voyage_env(monkeypatch, fake)
        args = ["run", "voyage-4-lite", "-b", "sample", "-s", "heat-pumps", "--results-dir", str(tmp_path / "r")]
        assert main([*args, "--cache-dir", str(tmp_path / "c")]) == 0
        folder = tmp_path / "r" / "sample" / "voyage-4-lite"
        if damage == "qrels.gz missing":
            (folder / "heat-pumps.qrels.gz").unlink()
        else:
            (folder / "heat-pumps.run.gz").write_bytes((folder / "heat-pumps.run.gz").read_bytes() + b"\n")
        request = sample_request(tmp_path, subsets=["heat-pumps"], resume=True)
        request.cache_dir = tmp_path / "fresh-cache"
        planned = plan_run(request)
        assert planned.requests == 2  # the pages and the queries, as for a first run
        sent = len(fake.requests)
        assert main([*args, "--cache-dir", str(tmp_path / "fresh-cache"), "--resume"]) == 0
        assert "heat-pumps: recomputing" in capsys.readouterr().err
        assert len(fake.requests) - sent == planned.requests


def test_max_cost_on_a_hub_subset_not_yet_downloaded_plans_it_then_runs_it(hub, tmp_path):
    """--max-cost plans (the plan downloads the subset, free), then runs in the same process on what it
    downloaded. A fresh process, so `datasets` is first imported by the plan: an earlier plan that loaded
    offline froze the datasets offline switch on there, and the run then refused the download as "cannot
    reach the Hub"."""
    import os
    import subprocess
    import sys

    home = tmp_path / "hf"
    (home / "datasets").mkdir(parents=True)  # some other dataset was downloaded before, not this one
    with FakeVoyage() as fake:
        env = dict(os.environ, HF_HOME=str(home), VOYAGE_BASE_URL=fake.url + "/v1", VOYAGE_API_KEY="test-key")
        args = ["run", "voyage-multimodal-3.5", "-b", "vidore-v3", "--subsets", "hr", "--content", "images"]
        args += ["--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c"), "--max-cost", "5"]
        done = subprocess.run([sys.executable, "-m", "evals_repro", *args], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        assert fake.requests, "the run embedded nothing"
    assert (tmp_path / "r/vidore-v3/voyage-multimodal-3.5[images]/hr.json").is_file()
    assert list((home / "datasets").iterdir()), "the subset was not downloaded into the datasets cache"

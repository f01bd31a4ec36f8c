"""A plan sees all the paid work or says it is incomplete (issue 30 item 6), and a first plan's tokens are a
range whose top `--max-cost` holds (item 7).

Expected ranges are recomputed here from the texts the fake received, by the rules the README states (a token
a word; 0.75 words a token; ASCII characters / 3 and one per other character), never read back from the plan;
expected dollars are those tokens at a round test price."""

from __future__ import annotations

import hashlib
import json
import math
import re

import pytest

from evals_repro.base.errors import UsageError
from evals_repro.cli import main
from evals_repro.providers.prices import load_prices, reset_prices
from fakes.base import Reply, Request, count_tokens, route
from fakes.voyage import FakeVoyage

WORD = re.compile(r"\w+")


@pytest.fixture(autouse=True)
def _shipped_prices():
    reset_prices()
    yield
    reset_prices()


@pytest.fixture(scope="module")
def hub(fake_hub):
    import hub_fixtures as fx

    return fx.install(fake_hub)


def voyage_env(monkeypatch, fake):
    monkeypatch.setenv("VOYAGE_API_KEY", "test-voyage-key")
    monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")


def request_of(tmp_path, method="voyage-4-lite", benchmark="sample", **kwargs):
    from evals_repro.runner.run_request import RunRequest

    return RunRequest(
        method=method, benchmark=benchmark, results_dir=tmp_path / "r", cache_dir=tmp_path / "c", **kwargs
    )


def write_prices(path, per=1000):
    """$1 per `per` voyage-4-lite input tokens: a cost in dollars is the tokens / per."""
    entry = {"provider": "voyage", "model": "voyage-4-lite", "unit": "input_tokens", "usd": 1, "per": per}
    path.write_text(json.dumps({"date": "2026-01-01", "prices": [entry]}))
    return path


# -- item 6: data that is not cached is downloaded; data that cannot be loaded makes the plan incomplete ------


def fresh_hr_commit(hub, tmp_path) -> str:
    """A commit of the hr domain that no test has loaded: nothing of it is in the session's datasets cache."""
    import hub_fixtures as fx

    sha = hashlib.sha1(str(tmp_path).encode()).hexdigest()
    hub.add_repo(fx.HR_REPO, sha, fx.vidore_raw_files(), branch=None)
    return sha


def test_a_plan_downloads_public_data_not_cached_yet_and_counts_what_the_run_sends(hub, monkeypatch, tmp_path):
    from evals_repro.planning.run import plan_run
    from evals_repro.runner.evaluation import run_benchmark

    request = request_of(tmp_path, benchmark="vidore-v3", subsets=["hr"], revision=fresh_hr_commit(hub, tmp_path))
    planned = plan_run(request)
    assert planned.incomplete is None
    assert not [note for note in planned.notes if "HF_HUB_OFFLINE" in note]  # nobody set it
    with FakeVoyage() as fake:
        voyage_env(monkeypatch, fake)
        run_benchmark(request)
        assert planned.requests == len(fake.requests) > 0


def test_a_plan_that_cannot_reach_the_hub_is_incomplete_and_max_cost_refuses_it(hub, monkeypatch, tmp_path, capsys):
    """The issue's case: `run voyage-4-large --plan` with no ViDoRe data at hand said "total: 0 requests,
    cost $0" and `--max-cost 1` passed."""
    from evals_repro.benchmarks import hub as hub_module

    monkeypatch.setattr(hub_module, "_RESOLVED", {})  # every pinned commit is probed again, not taken as known
    args = ["run", "voyage-4-large", "-b", "vidore-v3", "--results-dir", str(tmp_path / "r")]
    args += ["--cache-dir", str(tmp_path / "c")]
    with FakeVoyage() as fake:
        voyage_env(monkeypatch, fake)
        hub.stop()
        try:
            assert main([*args, "--plan"]) == 0
            out = capsys.readouterr().out
            assert main([*args, "--max-cost", "1"]) == 2
            err = capsys.readouterr().err
        finally:
            hub.start()
        assert fake.requests == []
    assert "total (incomplete: 8 of 8 subsets not planned, see the notes): 0 requests, cost $0 for what" in out
    assert out.count(": not planned: its data could not be loaded (cannot reach the Hugging Face Hub") == 8
    assert "HF_HUB_OFFLINE=1 is set" not in out  # the plan no longer sets it behind the user's back
    assert "error: --max-cost $1.00: the plan is incomplete (8 of 8 subsets not planned" in err
    assert "Traceback" not in err


def test_offline_by_the_users_own_choice_is_named_as_theirs(hub, monkeypatch, tmp_path):
    from huggingface_hub import constants

    from evals_repro.planning.run import plan_run

    sha = fresh_hr_commit(hub, tmp_path)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # what HF_HUB_OFFLINE=1 in the user's shell sets
    planned = plan_run(request_of(tmp_path, benchmark="vidore-v3", subsets=["hr"], revision=sha))
    assert planned.incomplete == "1 of 1 subsets not planned"
    assert any("not in the offline cache and HF_HUB_OFFLINE=1 is set" in note for note in planned.notes)


# -- item 7: a first guess is a range; --max-cost holds its top ---------------------------------------------


def test_a_first_guess_is_a_range_and_max_cost_holds_the_top_of_it(tmp_path):
    from evals_repro.providers.ceiling import check_ceiling
    from evals_repro.providers.plan import Plan, text_prior

    # "solar panels on roofs": 4 words in 21 characters; the throttle books ceil(21 / 3) = 7 tokens.
    # A token a word: 4; 0.75 words a token: 5.33 -> 5; the throttle's 7 on top.
    plan = Plan()
    guess = plan.guess("voyage", "voyage-4-lite", 7, text_prior(["solar panels on roofs"]))
    assert (guess.low, guess.point, guess.high) == (4, 5, 7)
    plan.add(
        "voyage", "voyage-4-lite", "documents", requests=1, items=1, tokens=guess, units=lambda t: {"input_tokens": t}
    )
    table = load_prices(write_prices(tmp_path / "p.json"))
    text = plan.render(table)
    row = next(line for line in text.splitlines() if line.startswith("voyage"))
    assert "5 (4-7)" in row and row.endswith("$0.005 ($0.004-$0.007)")
    assert "cost $0.005 (a first guess: $0.004 to $0.007)" in text
    with pytest.raises(UsageError, match=r"the plan costs up to \$0.007 \(a first guess: \$0.005 at 0.75 words"):
        check_ceiling(plan, table, 0.006)  # above the point, below the top
    check_ceiling(plan, table, 0.007)  # the top itself passes
    calibrated = Plan(ratios={("voyage", "voyage-4-lite"): 0.8})  # a run has seen the model's own count
    assert calibrated.guess("voyage", "voyage-4-lite", 7, text_prior(["solar panels on roofs"])).high == 6


def request_ranges(requests) -> tuple[int, int, int]:
    """(low, point, high) tokens of a first plan, per request the fake received, by the README's rules."""
    low = point = high = 0
    for r in requests:
        texts = r.json["input"]
        words = sum(len(WORD.findall(text)) for text in texts)
        throttle = 0
        for text in texts:
            other = sum(1 for ch in text if ord(ch) > 127)
            throttle += max(1, math.ceil((len(text) - other) / 3) + other)
        low += max(1, words)
        point += max(1, round(words / 0.75))
        high += max(1, round(max(throttle, words / 0.75)))
    return low, point, high


class CharsOver4Voyage(FakeVoyage):
    """Counts a token per 4 characters of each text, rounded up (the common rule of thumb for English BPE)."""

    @route("POST", r"/v1/embeddings")
    def embeddings(self, request: Request) -> Reply:
        body = request.json
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return self._answer(body, texts, {"total_tokens": sum(math.ceil(len(t) / 4) for t in texts)})


@pytest.mark.parametrize(
    ("fake_class", "count"),
    [(CharsOver4Voyage, lambda text: math.ceil(len(text) / 4)), (FakeVoyage, count_tokens)],
    ids=["chars/4", "1.3 a word"],
)
def test_what_the_server_counts_falls_inside_a_first_plans_range(fake_class, count, monkeypatch, tmp_path):
    from evals_repro.planning.run import plan_run
    from evals_repro.runner.evaluation import run_benchmark

    request = request_of(tmp_path, subsets=["heat-pumps", "railway-maintenance"])
    planned = plan_run(request)
    with fake_class() as fake:
        voyage_env(monkeypatch, fake)
        run_benchmark(request)
        requests = list(fake.requests)
    low, point, high = request_ranges(requests)
    lines = planned.lines.values()
    assert sum(li.tokens_low for li in lines) == low
    assert sum(li.tokens for li in lines) == point
    assert sum(li.tokens_high for li in lines) == high
    reported = sum(count(text) for r in requests for text in r.json["input"])
    assert low <= reported <= high, (low, reported, high)


def test_run_max_cost_between_a_first_plans_point_and_its_top_is_refused(monkeypatch, tmp_path, capsys):
    prices = write_prices(tmp_path / "p.json", per=1_000_000)  # costs of a few thousandths: 3 significant digits
    args = ["run", "voyage-4-lite", "-b", "sample", "-s", "heat-pumps", "--prices", str(prices)]
    with FakeVoyage() as fake:
        voyage_env(monkeypatch, fake)
        assert main([*args, "--results-dir", str(tmp_path / "seen"), "--cache-dir", str(tmp_path / "seen-c")]) == 0
        low, point, high = request_ranges(fake.requests)
        sent = len(fake.requests)
        where = ["--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")]
        capsys.readouterr()
        assert main([*args, *where, "--plan"]) == 0
        out = capsys.readouterr().out
        assert f"(a first guess: ${low / 1e6:.3g} to ${high / 1e6:.3g})" in out
        assert main([*args, *where, "--max-cost", f"{(point + high) / 2 / 1e6:.9f}"]) == 2
        assert len(fake.requests) == sent  # refused before any request
        assert f"the plan costs up to ${high / 1e6:.3g}" in capsys.readouterr().err
        assert main([*args, *where, "--max-cost", f"{high / 1e6:.9f}"]) == 0

"""A run's exit code says one thing (README "Exit codes"): whose failure it was, and whether other subsets are
done; and its last line names each reason once, with the subsets it hit, in at most 200 characters.

Rules (runner/run_request.failed_run): one subset asked -> its failure's own code; several, every one failed ->
their class (mixed: 1, then 5, then 2, then 3); several, some done -> 4. Plugin runs are tested through the CLI in
tests/test_plugin_contracts.py; here, the rules on outcomes made by hand, and the CLI in process on built-ins and
a rerank-api server.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import scripted_method
from evals_repro.base.errors import ComponentError, DataError, EvalsError, ProviderError
from evals_repro.base.registry import METHODS
from evals_repro.cli import main
from evals_repro.runner.run_request import SubsetOutcome, failed_run
from fakes.base import Reply
from fakes.openai_compat import FakeOpenAICompatible

KINDS = {1: None, 2: DataError, 3: ProviderError, 5: ComponentError}


def failure(subset: str, code: int, message: str = "it broke") -> SubsetOutcome:
    error: EvalsError | None = KINDS[code](message, "the fix") if KINDS[code] else None
    reason = error.one_line() if error is not None else f"RuntimeError: {message}"
    return SubsetOutcome(subset, Path(subset), "failed", reason=reason, error=error)


def done(subset: str) -> SubsetOutcome:
    return SubsetOutcome(subset, Path(subset), "written")


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        ([3, 3, 3], 3),  # every replica down on every subset: a provider's failure, not "some subsets failed"
        ([5, 5], 5),
        ([2, 2], 2),
        ([1, 1], 1),
        ([3, 5], 5),  # mixed: exit 3 (try again later) only when every failure is a provider's
        ([2, 3], 2),
        ([5, 2, 3], 5),
        ([3, 2, 1], 1),  # a bug of ours outranks the rest
    ],
)
def test_every_subset_failed_exits_with_their_class(codes, expected):
    outcomes = [failure(f"s{i}", code, f"reason {i}") for i, code in enumerate(codes)]
    error = failed_run(outcomes, len(outcomes))
    assert error is not None and error.exit_code == expected
    assert error.one_line().startswith(f"all {len(codes)} subsets failed")
    words = {1: "on an unexpected error", 2: "on their data or options", 3: "at the provider", 5: "in your component"}
    assert error.one_line().startswith(f"all {len(codes)} subsets failed {words[expected]}") == (len(set(codes)) == 1)


@pytest.mark.parametrize("code", [1, 2, 3, 5])
def test_some_subsets_failed_exits_4_and_advises_resume(code):
    error = failed_run([failure("beta", code)], 3)
    assert error is not None and error.exit_code == 4
    assert error.one_line().startswith("1 of 3 subsets failed (beta): ")
    assert error.one_line().endswith("fix it, then rerun with --resume (it runs only those)")


@pytest.mark.parametrize("code", [2, 3, 5])
def test_a_single_subset_run_ends_with_its_own_error(code):
    only = failure("heat-pumps", code)
    assert failed_run([only], 1) is only.error


def test_a_single_subset_bug_is_exit_1_naming_the_subset():
    error = failed_run([failure("heat-pumps", 1, "boom")], 1)
    assert error is not None and error.exit_code == 1
    assert error.one_line() == (
        "heat-pumps: RuntimeError: boom: an unexpected error: please report it with its traceback (--verbose shows it)"
    )


def test_no_failure_no_error():
    assert failed_run([], 3) is None


def test_a_shared_reason_is_named_once_with_its_subsets():
    reason = "rerank-api m: every replica is down (http://127.0.0.1:1/v1) (last: ConnectError: refused)"
    outcomes = [failure(name, 3, reason) for name in ("a", "c")]
    error = failed_run(outcomes, 3)
    assert error is not None
    assert error.one_line() == (
        f"2 of 3 subsets failed (a, c): {reason}: fix it, then rerun with --resume (it runs only those)"
    )
    assert error.one_line().count("every replica is down") == 1


def test_the_last_line_fits_200_characters_whatever_the_reasons_and_subsets():
    """Random reasons (long, alike, distinct) over many long subset names: never past 200 characters, each
    distinct reason at most once, and never a subset named twice."""
    rng = random.Random(7)
    words = ["replica", "timeout", "page", "query", "corpus", "(http://127.0.0.1:8000/v1, x)", "score", "NaN"]
    for _ in range(300):
        names = [f"subset_{i}_" + "x" * rng.randint(0, 40) for i in range(rng.randint(2, 12))]
        reasons = [" ".join(rng.choices(words, k=rng.randint(1, 60))) for _ in range(rng.randint(1, 4))]
        who = rng.choice(["", "method 'mine' (acme-search 1.3.0, acme.evals:Mine): "])
        failed = [failure(n, rng.choice([2, 3, 5]), who + rng.choice(reasons)) for n in names[: rng.randint(1, 12)]]
        error = failed_run(failed, len(names))
        line = f"error: {error.one_line()}"
        assert len(line) <= 200, line
        for name in names:
            assert line.count(name + " ") + line.count(name + ",") + line.count(name + ")") <= 1, line


# -- through the CLI, in process ------------------------------------------------------------------------

MODEL = "BAAI/bge-reranker-v2-m3"


def rerank_run(tmp_path: Path, url: str, *subsets: str) -> int:
    folders = ["--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]
    chosen = ["-s", ",".join(subsets)] if subsets else []
    method = f"bm25+rerank-api:{MODEL}@5"
    return main(["run", method, "-b", "sample", *chosen, *folders, "--rerank-base-url", url, "--top-k", "5"])


@pytest.fixture(autouse=True)
def no_rerank_environment(monkeypatch):
    for name in ("RERANK_API_BASE_URL", "RERANK_API_BASE_URLS", "RERANK_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("subsets", [("heat-pumps", "clinical-trials"), ("heat-pumps",)])
def test_every_replica_down_exits_3_on_one_subset_or_all(tmp_path, capsys, subsets):
    """The server answered the start-up check, then drops every rerank request: a provider's failure (exit 3),
    whether one subset was asked or several (it was 4: "some subsets failed")."""
    with FakeOpenAICompatible(MODEL, max_model_len=100_000) as fake:
        fake.script(*[Reply(200, drop=True, path="/rerank") for _ in range(200)])
        code = rerank_run(tmp_path, fake.url, *subsets)
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert code == 3, err
    assert "every replica is down" in last and "Traceback" not in err
    if len(subsets) == 1:  # the error itself (the replica pool's own line)
        assert last.startswith(f"error: rerank-api {MODEL}: every replica is down ({fake.url}; last: ")
        assert err.count("every replica is down") == 1 and len(last) <= 200
    else:
        assert last.startswith(
            f"error: all 2 subsets failed at the provider: rerank-api {MODEL}: every replica is down"
        )
        assert last.count("every replica is down") == 1 and len(last) <= 200


def test_a_bug_on_every_subset_exits_1(tmp_path, capsys, monkeypatch, registered):
    registered(METHODS, "scripted", scripted_method.build)
    monkeypatch.setattr(scripted_method, "FAIL_ON_SUBSET", {"heat-pumps", "railway-maintenance", "clinical-trials"})
    folders = ["--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]
    assert main(["run", "scripted", "-b", "sample", *folders]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: all 3 subsets failed on an unexpected error: RuntimeError: scripted failure on")

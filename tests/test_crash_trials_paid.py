"""Crash trials (tests/crash_trials.py) for the other commands that pay: `answer` (generator and judge calls,
Gemini and an OpenAI-compatible server) and `grounding predict` (Gemini). SIGKILL at seeded random points,
resume, and check that no completed call is paid twice and the end result equals an uninterrupted run's.
`run` with an API embedder, `rerank-study quality|latency` and `mixedbread-upload` are in test_crash_trials.py."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import hub_fixtures as fx
from crash_trials import Driver, Ledger, Scenario
from evals_repro.base.io import read_jsonl
from fakes.generators import FakeGeminiGenerate, FakeOpenAIChat
from test_crash_trials import KEYS, LedgerCohere, LedgerStores, report, run_outcome
from test_vidore_answer import respond as answer_respond
from test_vidore_grounding import respond as grounding_respond


def call_key(provider: str, model: str, body: dict) -> str:
    return f"{provider}|{model}|{hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]}"


class LedgerGemini(Ledger, FakeGeminiGenerate):
    def keys(self, request) -> list[str]:
        if request.method != "POST" or ":generateContent" not in request.path:
            return []
        return [call_key("gemini", request.path.rsplit("/", 1)[-1].split(":")[0], request.json)]


class LedgerOpenAI(Ledger, FakeOpenAIChat):
    def keys(self, request) -> list[str]:
        if request.method != "POST" or not request.path.endswith("/chat/completions"):
            return []
        return [call_key("openai", request.json["model"], request.json)]


@pytest.fixture(scope="module")
def hub(fake_hub):
    return fx.install(fake_hub)


def generator_env(fakes) -> dict[str, str]:
    env = {"GOOGLE_GEMINI_BASE_URL": fakes["gemini"].url, "GEMINI_API_KEY": "crash-gemini-key"}
    if "openai" in fakes:
        env.update(OPENAI_BASE_URL=f"{fakes['openai'].url}/v1", OPENAI_API_KEY="sk-test")
    return env


def answer_outcome(directory: Path, fakes) -> dict:
    """Every answer and verdict (one per call, none twice), the labels and the scores of the run."""
    found: dict = {}
    for path in sorted((directory / "out").rglob("*.jsonl")):
        records = [r for r in read_jsonl(path) if r.get("status") == "ok"]
        digests = [r["digest"] for r in records]
        assert len(digests) == len(set(digests)), f"{path}: a call was recorded twice"
        found[str(path.relative_to(directory))] = sorted(
            json.dumps(
                {k: v for k, v in r.items() if k not in ("wall_ms", "elapsed_ms", "at", "usage")}, sort_keys=True
            )
            for r in records
        )
    for path in sorted((directory / "out").rglob("result.json")):
        result = json.loads(path.read_text())
        found[str(path.relative_to(directory))] = {
            k: v for k, v in result.items() if k not in ("spend", "timings", "created")
        }
    assert found
    return found


def answer_scenario() -> Scenario:
    return Scenario(
        name="answer (no-context panel: generators and judge)",
        fakes=lambda: {
            "gemini": LedgerGemini(answer_respond, slow=0.2),
            "openai": LedgerOpenAI(answer_respond, key="sk-test", slow=0.2),
        },
        env=generator_env,
        args=lambda d: [
            "answer",
            "--subsets",
            "hr",
            "--subsets",
            "energy",
            "--no-context",
            "--models",
            "gemini:fake-pro",
            "openai:fake-oss",
            "gemini:fake-flash",
            "--judge",
            "openai:fake-judge",
            "--out-dir",
            "out",
            "--cache-dir",
            "cache",
            "--workers",
            "2",
        ],
        outcome=answer_outcome,
    )


def grounding_scenario() -> Scenario:
    return Scenario(
        name="grounding predict",
        fakes=lambda: {"gemini": LedgerGemini(grounding_respond, slow=0.3)},
        env=generator_env,
        args=lambda d: [
            "grounding",
            "predict",
            "--subsets",
            "hr",
            "--subsets",
            "energy",
            "--generator",
            "gemini:fake-pro",
            "--out-dir",
            "out",
            "--cache-dir",
            "cache",
            "--workers",
            "1",
        ],
        outcome=answer_outcome,
    )


def reranked_outcome(directory: Path, fakes) -> dict:
    """`run_outcome`, without whether the BM25 index came from the cache (a resumed run finds it there)."""
    found = run_outcome(directory, fakes)
    for record in found.values():
        record["config"]["retriever"]["first_stage"].pop("cache_hit", None)
    return found


RERANKED_RUN = Scenario(
    name="run bm25+cohere (a hosted reranker)",
    fakes=lambda: {"cohere": LedgerCohere(slow=0.1)},
    env=lambda fakes: {"CO_API_URL": fakes["cohere"].url, **KEYS},
    args=lambda d: [
        "run",
        "bm25+cohere:rerank-v4.0-fast@10",
        "--benchmark",
        "sample",
        "--subsets",
        "heat-pumps",
        "--subsets",
        "railway-maintenance",
        "--results-dir",
        "results",
        "--cache-dir",
        "cache",
        "--resume",
        "--workers",
        "2",
    ],
    outcome=reranked_outcome,
)


def test_crash_trials_run_with_a_hosted_reranker(tmp_path):
    report(Driver(RERANKED_RUN, tmp_path))


_UPLOADED: list = []  # (stores, files, next id) of the fake after the real upload, made once per session
STORE_SUBSETS = ("heat-pumps", "railway-maintenance")


class UploadedStores(LedgerStores):
    """The store fake with the sample's pages already uploaded (by the real `mixedbread-upload`, once; each
    chain starts from a copy); only store searches are billable here."""

    def __enter__(self):
        super().__enter__()
        if not _UPLOADED:
            with tempfile.TemporaryDirectory() as cache:
                args = ["mixedbread-upload", "markdown", "-b", "sample", "--cache-dir", cache, "--workers", "4"]
                for subset in STORE_SUBSETS:
                    args += ["-s", subset]
                env = dict(os.environ, MIXEDBREAD_BASE_URL=self.url, EVALS_REPRO_NO_PROGRESS="1", **KEYS)
                code = "import sys; from evals_repro.cli import main; sys.exit(main(sys.argv[1:]))"
                done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
                assert done.returncode == 0, done.stderr
            _UPLOADED.append(copy.deepcopy((self.stores, self.files, next(self._ids))))
        stores, files, next_id = copy.deepcopy(_UPLOADED[0])
        self.stores, self.files, self._ids = stores, files, itertools.count(next_id)
        return self

    def keys(self, request) -> list[str]:
        if request.method != "POST" or request.path.split("?", 1)[0] != "/v1/stores/search":
            return []
        body = request.json
        return [f"search|{','.join(body['store_identifiers'])}|{body['query']}"]


STORE_RUN = Scenario(
    name="run mixedbread-markdown (store search)",
    fakes=lambda: {"mixedbread": UploadedStores(polls_to_complete=1, slow=0.1)},
    env=lambda fakes: {"MIXEDBREAD_BASE_URL": fakes["mixedbread"].url, **KEYS},
    args=lambda d: [
        "run",
        "mixedbread-markdown",
        "--benchmark",
        "sample",
        *[arg for subset in STORE_SUBSETS for arg in ("--subsets", subset)],
        "--results-dir",
        "results",
        "--cache-dir",
        "cache",
        "--resume",
        "--workers",
        "2",
    ],
    outcome=run_outcome,
)


def test_crash_trials_run_with_a_store_search(tmp_path):
    report(Driver(STORE_RUN, tmp_path))


def test_crash_trials_answer(tmp_path, hub):
    report(Driver(answer_scenario(), tmp_path))


def test_crash_trials_grounding_predict(tmp_path, hub):
    report(Driver(grounding_scenario(), tmp_path))

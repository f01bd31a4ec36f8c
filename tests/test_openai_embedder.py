"""`openai:<model>`: the official openai SDK against fake OpenAI-compatible servers (tests/fakes/openai_compat.py,
schemas of OpenAI's embeddings API and vLLM 0.33.0's protocol models) on 127.0.0.1: replicas, prefixes,
dimensions, the cache key, spend, a replica killed mid-run, and each bad input as one line with exit 2."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evals_repro.base.context import MethodContext
from evals_repro.base.errors import ConfigurationError, UsageError
from evals_repro.base.registry import EMBEDDERS
from evals_repro.cli import main
from evals_repro.embedders.base import EmbedItem, normalise
from evals_repro.embedders.registry import build_embedder
from evals_repro.records.results import result_path
from fakes.base import bag_of_words
from fakes.openai_compat import FakeOpenAICompatible

MODEL = "intfloat/e5-small-v2"
TESTS = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def no_openai_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_BASE_URLS"):
        monkeypatch.delenv(name, raising=False)


def run_args(tmp_path, method: str, *extra: str) -> list[str]:
    return [
        "run",
        method,
        "-b",
        "sample",
        "-s",
        "heat-pumps",
        "--results-dir",
        str(tmp_path / "results"),
        "--cache-dir",
        str(tmp_path / "cache"),
        *extra,
    ]


def embedder(urls: list[str], **options):
    return build_embedder(
        f"openai:{MODEL}", MethodContext(benchmark="t", options={"base_url": ",".join(urls), **options})
    )


def test_registry_resolves_any_openai_name_to_the_one_family_entry():
    entry = EMBEDDERS.get("openai:text-embedding-3-large")
    assert entry is not None and entry.name == "openai:text-embedding-3-large"
    assert EMBEDDERS.get("openai:") is None  # the prefix alone names no model
    assert "openai:<model>" in EMBEDDERS.names()


def test_run_on_two_replicas_with_e5_prefixes_then_warm_rerun_sends_nothing(tmp_path, capsys):
    with FakeOpenAICompatible(MODEL) as a, FakeOpenAICompatible(MODEL) as b:
        args = run_args(tmp_path, f"openai:{MODEL}", "--base-url", f"{a.url}/v1,{b.url}/v1", "--prefix-style", "e5")
        args += ["--batch-size", "8"]
        assert main(args) == 0
        sent = a.embed_inputs + b.embed_inputs
        assert a.embed_inputs and b.embed_inputs  # both replicas took batches
        texts = [t for batch in sent for t in batch]
        assert all(len(batch) <= 8 for batch in sent)
        assert all(t.startswith(("query: ", "passage: ")) for t in texts)
        assert sum(t.startswith("query: ") for t in texts) == 26  # the subset's 26 queries, each once
        # the record keeps the name as written (its folder is results.result_path's business)
        path = result_path(tmp_path / "results", "sample", f"openai:{MODEL}", "heat-pumps")
        record = json.loads(path.read_text())
        assert record["method"] == f"openai:{MODEL}"
        usage = record["usage"]
        assert usage["openai_requests"] == len(sent)
        # the spend is the servers' own token count (usage.prompt_tokens), not the client's estimate
        assert usage["openai_tokens"] == sum(len(a.tokens(t)) for t in texts)
        embedder_config = record["config"]["retriever"]["embedder"]
        assert embedder_config["server_model"] == {"id": MODEL, "root": MODEL, "owned_by": "vllm", "max_model_len": 512}
        assert embedder_config["query_prefix"] == "query: " and embedder_config["document_prefix"] == "passage: "
        assert record["config"]["options"]["prefix_style"] == "e5"
        requests = len(a.requests) + len(b.requests)
        assert main(args) == 0
        # warm: only the two /v1/models checks, no embedding
        assert len(a.requests) + len(b.requests) == requests + 2
    assert "openai requests" in capsys.readouterr().err


def test_vectors_are_the_servers_rows_in_item_order_with_dimensions(tmp_path):
    with FakeOpenAICompatible(MODEL, width=32) as fake:
        built = embedder([f"{fake.url}/v1"], dimensions=16, query_prefix="q: ", batch_size=3)
        texts = ["heat pump", "brine circuit pressure", "air coil fins", "outdoor unit noise", "defrost"]
        matrix = built.embed([EmbedItem(text=t) for t in texts], "query")
        assert matrix.shape == (5, 16)
        # hand-built expectation: the fake's bag of words of the prefixed text, first 16 of 32, unit length
        expected = normalise(np.stack([bag_of_words("q: " + t, 32)[:16] for t in texts]))
        np.testing.assert_allclose(matrix, expected, atol=1e-6)
        assert all(json.loads(r.body).get("dimensions") == 16 for r in fake.requests if r.path == "/v1/embeddings")


def test_cache_key_follows_the_servers_model_identity_prefixes_and_dimensions(tmp_path):
    from evals_repro.embedders.cache_keys import settings_digest

    with FakeOpenAICompatible(MODEL, root="/models/e5-a") as a, FakeOpenAICompatible(MODEL, root="/models/e5-b") as b:
        first = settings_digest(embedder([f"{a.url}/v1"]), "document")
        assert settings_digest(embedder([f"{a.url}/v1"]), "document") == first
        assert settings_digest(embedder([f"{b.url}/v1"]), "document") != first  # another checkpoint, same name
        assert settings_digest(embedder([f"{a.url}/v1"], dimensions=8), "document") != first
        assert settings_digest(embedder([f"{a.url}/v1"], prefix_style="nomic"), "document") != first
    with FakeOpenAICompatible(MODEL, root="/models/e5-a") as moved:  # same checkpoint on another port
        moved.created = 1  # a restart changes `created`, which is not identity
        assert settings_digest(embedder([f"{moved.url}/v1"]), "document") == first


def spawn_replica(*args: str) -> tuple[subprocess.Popen, str]:
    """A fake replica in its own process (so that killing it really drops its connections), and its URL."""
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    process = subprocess.Popen(
        [sys.executable, "-m", "fakes.openai_process", MODEL, *args], stdout=subprocess.PIPE, text=True, env=env
    )
    return process, process.stdout.readline().strip()


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()


def test_replica_killed_mid_run_loses_nothing_and_pays_nothing_twice(tmp_path, caplog):
    import logging

    log = tmp_path / "dying.jsonl"
    dying, dying_url = spawn_replica("--latency", "0.05", "--die-after", "6", "--answer-log", str(log))
    try:
        with FakeOpenAICompatible(MODEL, latency=0.05) as healthy:
            built = embedder([f"{dying_url}/v1", f"{healthy.url}/v1"], batch_size=4, workers=4)
            texts = [f"page {i} about heat pumps and brine circuit {i * 7}" for i in range(80)]
            with caplog.at_level(logging.WARNING, logger="evals_repro.providers.replicas"):
                matrix = built.embed([EmbedItem(text=t) for t in texts], "document")
            assert dying.wait(timeout=30) == 9  # it really died mid-run
            assert built.pool.failovers >= 1
            # named once, however many of its requests were in flight when it died
            (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
            assert warning.startswith(f"openai {MODEL} embed: replica {dying_url}/v1 stopped answering (")
            assert warning.endswith("; its requests go to the 1 other live replica(s)")
            expected = normalise(np.stack([bag_of_words(t, 32) for t in texts]))
            np.testing.assert_allclose(matrix, expected, atol=1e-6)  # nothing lost, every row in place
            answered_by_dead = [t for line in log.read_text().splitlines() for t in json.loads(line)]
            answered_by_healthy = [t for batch in healthy.embed_inputs for t in batch]
            assert answered_by_dead  # it answered some batches before dying
            # nothing paid twice: no text answered by both, or twice by the survivor
            assert not set(answered_by_dead) & set(answered_by_healthy)
            assert len(answered_by_healthy) == len(set(answered_by_healthy))
            assert set(answered_by_dead) | set(answered_by_healthy) == set(texts)
    finally:
        stop(dying)


def test_every_replica_down_is_one_provider_error(tmp_path, caplog):
    """One short error line; each replica is named once, in the warning said as it stopped answering."""
    from evals_repro.base.errors import ProviderError

    first, first_url = spawn_replica()
    second, second_url = spawn_replica()
    try:
        built = embedder([f"{first_url}/v1", f"{second_url}/v1"], max_attempts=1)
    finally:
        stop(first)
        stop(second)
    with pytest.raises(ProviderError, match=r"every replica is down \(2 replicas, named above; last: ") as failed:
        built.embed([EmbedItem(text="x")], "query")
    assert len(failed.value.one_line()) <= 200
    stopped = [r.getMessage() for r in caplog.records if "stopped answering" in r.getMessage()]
    for url in (first_url, second_url):
        assert sum(f"replica {url}/v1 stopped answering" in line for line in stopped) == 1, stopped


def free_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


@pytest.mark.parametrize(
    "case, message",
    [
        ("unknown model", "does not serve 'text-embedding-3-large': it lists intfloat/e5-small-v2"),
        ("unreachable", "cannot reach http://127.0.0.1:"),
        ("duplicate", "names the replica"),
        ("not http", "is not an http(s) URL"),
        ("bad style", "--prefix-style 'e6' is not known: choose from none, e5, bge, nomic"),
        ("option for another method", "--dimensions applies to openai:<model>, not to 'bm25'"),
    ],
)
def test_bad_input_is_one_line_exit_2(case, message, tmp_path, capsys):
    with FakeOpenAICompatible(MODEL) as fake:
        url = f"{fake.url}/v1"
        method, extra = f"openai:{MODEL}", ["--base-url", url]
        if case == "unknown model":
            method = "openai:text-embedding-3-large"
        elif case == "unreachable":
            extra = ["--base-url", free_port_url()]
        elif case == "duplicate":
            extra = ["--base-url", f"{url},{url}/"]
        elif case == "not http":
            extra = ["--base-url", "127.0.0.1:8000/v1"]
        elif case == "bad style":
            extra += ["--prefix-style", "e6"]
        elif case == "option for another method":
            method, extra = "bm25", ["--dimensions", "8"]
        assert main(run_args(tmp_path, method, *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_duplicate_in_openai_base_urls_is_named(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("OPENAI_BASE_URLS", "http://127.0.0.1:9/v1,http://127.0.0.1:9/v1")
    assert main(run_args(tmp_path, f"openai:{MODEL}")) == 2
    err = capsys.readouterr().err
    assert "OPENAI_BASE_URLS names the replica http://127.0.0.1:9/v1 twice" in err and err.count("\n") == 1


def test_width_that_changes_mid_run_stops_the_run_with_exit_2(tmp_path, capsys):
    with FakeOpenAICompatible(MODEL, width=32) as fake:
        fake.width_after = (3, 48)  # from the 4th request on, the server answers 48-wide vectors
        args = run_args(tmp_path, f"openai:{MODEL}", "--base-url", f"{fake.url}/v1", "--batch-size", "4")
        assert main([*args, "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "answered 48-wide embeddings after 32-wide ones in this run" in err and err.count("\n") == 1


def test_server_errors_use_the_openai_error_body_and_are_retried(tmp_path):
    with FakeOpenAICompatible(MODEL) as fake:
        built = embedder([f"{fake.url}/v1"])
        fake.fail(503, times=1, path="/v1/embeddings")
        fake.fail(429, times=1, retry_after="0", path="/v1/embeddings")
        matrix = built.embed([EmbedItem(text="heat pump")], "query")
        assert matrix.shape == (1, 32)
        assert built.usage.get("openai_retries") == 2 and built.usage.get("openai_rate_limited") == 1
        fake.fail(400, times=1, path="/v1/embeddings")
        from evals_repro.base.errors import ProviderError

        with pytest.raises(ProviderError, match=r"rejected \(HTTP 400\): scripted 400"):
            built.embed([EmbedItem(text="heat pump")], "query")


def test_openai_itself_needs_the_key_and_a_server_of_your_own_does_not(monkeypatch):
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        build_embedder("openai:text-embedding-3-large", MethodContext(benchmark="t"))
    with FakeOpenAICompatible(MODEL) as fake:
        embedder([f"{fake.url}/v1"])  # no key: fine for a local server
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
        built = embedder([f"{fake.url}/v1"])
        built.embed([EmbedItem(text="x")], "query")
        assert fake.requests[-1].headers["authorization"] == "Bearer sk-test-0123456789abcdef"


def test_budget_defaults_openai_tier_one_and_none_for_your_own_server(monkeypatch):
    with FakeOpenAICompatible(MODEL) as fake:
        own = embedder([f"{fake.url}/v1"])
        assert (own.settings.tokens_per_minute, own.settings.requests_per_minute) == (0, 0)
        capped = embedder([f"{fake.url}/v1"], openai_tpm=5000, openai_rpm=60)
        assert (capped.settings.tokens_per_minute, capped.settings.requests_per_minute) == (5000, 60)
    with pytest.raises(UsageError):
        embedder(["http://127.0.0.1:9/v1"], batch_size=0)


def test_a_tei_server_is_identified_by_its_info_model_and_sha():
    from fakes.tei import FakeTEI

    with FakeTEI(MODEL, sha="1" * 40, max_model_len=512) as fake:
        built = embedder([f"{fake.url}/v1"])
        assert built.identity == {
            "id": MODEL,
            "revision": "1" * 40,
            "max_model_len": 512,
            "owned_by": "text-embeddings-inference",
        }
        matrix = built.embed([EmbedItem(text="heat pump")], "query")
        np.testing.assert_allclose(matrix[0], bag_of_words("heat pump", 32), atol=1e-6)
    with FakeTEI(MODEL, sha="2" * 40) as other:  # another commit of the same model: another cache key
        from evals_repro.embedders.cache_keys import settings_digest

        assert settings_digest(embedder([f"{other.url}/v1"]), "query") != settings_digest(built, "query")


def test_openai_names_inside_pipelines():
    from evals_repro.methods.pipeline import PipelineSpec

    fused = PipelineSpec.parse(f"rrf:bm25+openai:{MODEL}@{'a' * 40}+cohere@10")
    assert fused.first_stage == ("bm25", f"openai:{MODEL}@{'a' * 40}") and fused.rerank.reranker == "cohere"
    assert PipelineSpec.parse("rrf:bm25+openai:m").first_stage == ("bm25", "openai:m")
    reranked = PipelineSpec.parse(f"openai:{MODEL}+rerank-api:BAAI/bge-reranker-v2-m3@30")
    assert reranked.first_stage == (f"openai:{MODEL}",)
    assert (reranked.rerank.reranker, reranked.rerank.model, reranked.rerank.depth) == (
        "rerank-api",
        "BAAI/bge-reranker-v2-m3",
        30,
    )


def test_plan_and_cost_ceiling_price_your_own_server_at_nothing(tmp_path, capsys):
    with FakeOpenAICompatible(MODEL) as fake:
        args = run_args(tmp_path, f"openai:{MODEL}", "--base-url", f"{fake.url}/v1")
        assert main([*args, "--plan"]) == 0
        out = capsys.readouterr().out
        # one request for the 38 pages, one for the 26 queries
        assert "total: 2 requests, cost self-hosted: no price" in out
        assert not [r for r in fake.requests if r.path == "/v1/embeddings"]  # a plan sends nothing
        assert main([*args, "--max-cost", "0.01"]) == 0  # never "price unknown": it costs nothing
        record = json.loads(result_path(tmp_path / "results", "sample", f"openai:{MODEL}", "heat-pumps").read_text())
        assert "price unknown" not in json.dumps(record) and record["usage"]["openai_requests"] == 2


def test_resume_keeps_a_result_only_while_the_server_serves_the_same_checkpoint(tmp_path, capsys):
    def run(root: str) -> str:
        with FakeOpenAICompatible(MODEL, root=root) as fake:  # a fresh server (a new port) each time
            args = run_args(tmp_path, f"openai:{MODEL}", "--base-url", f"{fake.url}/v1", "--resume")
            assert main(args) == 0
        return capsys.readouterr().err

    run("/models/e5-a")
    assert "complete result kept" in run("/models/e5-a")  # moved to another port: same checkpoint, kept
    again = run("/models/e5-b")  # the same name now serves another checkpoint
    assert "recomputing" in again and "served_models" in again
    record = json.loads(result_path(tmp_path / "results", "sample", f"openai:{MODEL}", "heat-pumps").read_text())
    assert json.loads(record["config"]["options"]["served_models"])[f"openai:{MODEL}"]["root"] == "/models/e5-b"

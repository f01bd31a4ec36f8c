"""Replicas of your own started with a key: `openai:`, `rerank-api:` and the local vLLM rerankers send it to every
replica (each fake enforces it as its server does: vLLM 0.33.0 on /v1/..., TEI and Infinity on every route but
/health), a missing or wrong key is one line naming the variable, and a replica that stops answering mid-run is
named in one warning line while its calls go to the others."""

from __future__ import annotations

import logging

import pytest

from evals_repro.base.context import MethodContext
from evals_repro.base.errors import ConfigurationError
from evals_repro.base.registry import RERANKERS
from evals_repro.base.usage import Usage
from evals_repro.embedders.base import EmbedItem
from evals_repro.embedders.registry import build_embedder
from evals_repro.rerankers import vllm as vllm_client
from fakes.base import Reply
from fakes.infinity import FakeInfinity
from fakes.openai_compat import FakeOpenAICompatible
from fakes.tei import FakeTEI
from fakes.vllm import FakeVllm

KEY = "vk-Rt7wQ2zL9pXc4mNb8sHd"
OTHER = "sk-openai-Yh3Jk8Lm2Nq5Pr7St9"  # OpenAI's own key: never sent to a server of your own while VLLM_API_KEY is set
EMBEDDER = "intfloat/e5-small-v2"
RERANKER = "BAAI/bge-reranker-v2-m3"
QWEN_ID = "Qwen/Qwen3-Reranker-8B@77d193c791ed757ca307ee72715aa132723da912"
ENV = ("VLLM_API_KEY", "OPENAI_API_KEY", "RERANK_API_KEY", "OPENAI_BASE_URL", "OPENAI_BASE_URLS", "QWEN_RERANK_URLS")


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    for name in (*ENV, "RERANK_API_BASE_URL", "RERANK_API_BASE_URLS"):
        monkeypatch.delenv(name, raising=False)
    vllm_client.reset_replica_sets()
    yield
    vllm_client.reset_replica_sets()


def bearer(fake) -> set[str | None]:
    return {r.headers.get("authorization") for r in fake.requests}


def embed(urls: list[str]) -> None:
    options = {"base_url": ",".join(urls), "batch_size": 2}  # three requests: each replica gets one
    built = build_embedder(f"openai:{EMBEDDER}", MethodContext(benchmark="t", options=options))
    built.embed([EmbedItem(text=f"page {i} on brine circuits") for i in range(6)], "document")


def rerank_api(urls: list[str], **options):
    ctx = MethodContext(benchmark="t", options={"rerank_base_url": ",".join(urls), **options}, usage=Usage())
    return RERANKERS.require("rerank-api").factory("rerank-api", RERANKER, ctx)


def qwen(urls: list[str], monkeypatch):
    monkeypatch.setenv("QWEN_RERANK_URLS", ",".join(urls))
    ctx = MethodContext(benchmark="t", options={"timeout": 10}, usage=Usage())
    return RERANKERS.require("qwen3-8b").factory("qwen3-8b", None, ctx)


# -- the key reaches every replica ---------------------------------------------------------------------------
def test_openai_sends_vllm_api_key_to_every_replica_and_never_openais_own(monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OTHER)
    with FakeOpenAICompatible(EMBEDDER, api_key=KEY) as a, FakeOpenAICompatible(EMBEDDER, api_key=KEY) as b:
        embed([f"{a.url}/v1", f"{b.url}/v1"])
        assert any(r.path == "/v1/embeddings" for r in a.requests) and any(
            r.path == "/v1/embeddings" for r in b.requests
        )
        assert bearer(a) == bearer(b) == {f"Bearer {KEY}"}


def test_openai_falls_back_to_openai_api_key_for_a_server_of_your_own(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # how a keyed server was reached before VLLM_API_KEY
    with FakeTEI(EMBEDDER, api_key=KEY) as tei:  # TEI guards /info and /v1/embeddings alike
        embed([f"{tei.url}/v1"])
        assert bearer(tei) - {None} == {f"Bearer {KEY}"} and any(r.path == "/info" for r in tei.requests)


def test_rerank_api_sends_its_key_to_every_replica(monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    with FakeOpenAICompatible(RERANKER, max_model_len=50, api_key=KEY) as a, FakeTEI(RERANKER, api_key=KEY) as b:
        for fake in (a, b):
            built = rerank_api([fake.url])
            built.rerank("brine circuit", ["heat pump noise", " ".join(["word"] * 600)])
            assert built.ctx.usage.get("rerank_documents_truncated") == 1
            assert bearer(fake) == {f"Bearer {KEY}"}  # /v1/models or /info, /tokenize, the cut, /rerank


def test_rerank_api_key_wins_over_vllm_api_key(monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    monkeypatch.setenv("RERANK_API_KEY", OTHER)
    with FakeInfinity(RERANKER, api_key=OTHER) as fake:
        rerank_api([fake.url], rerank_max_tokens=100).rerank("heat pump", ["heat pump noise"])
        assert bearer(fake) == {f"Bearer {OTHER}"} and fake.scored


def test_the_local_rerankers_send_vllm_api_key_to_every_replica(monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    with FakeVllm(QWEN_ID, "yes-no", api_key=KEY) as a, FakeVllm(QWEN_ID, "yes-no", api_key=KEY) as b:
        built = qwen([a.url, b.url], monkeypatch)
        for i in range(4):
            built.rerank(f"query {i}", ["doc one", "doc two"])
        for fake in (a, b):
            assert {r.path for r in fake.requests} >= {"/v1/models", "/tokenize", "/classify"}
            assert bearer(fake) == {f"Bearer {KEY}"}  # the unguarded /classify and /tokenize too


# -- a missing or wrong key ----------------------------------------------------------------------------------
@pytest.mark.parametrize("client", ["openai", "rerank-api", "qwen3-8b"])
@pytest.mark.parametrize("sent", [None, "vk-wrong-0000000000"])
def test_a_refused_key_is_one_line_naming_the_variable(client, sent, monkeypatch):
    if sent:
        monkeypatch.setenv("VLLM_API_KEY", sent)
    variables = {"openai": "VLLM_API_KEY or OPENAI_API_KEY", "rerank-api": "RERANK_API_KEY or VLLM_API_KEY"}
    with FakeOpenAICompatible(EMBEDDER, api_key=KEY) as plain, FakeVllm(QWEN_ID, "yes-no", api_key=KEY) as local:
        with pytest.raises(ConfigurationError) as raised:
            if client == "openai":
                embed([f"{plain.url}/v1"])
            elif client == "rerank-api":
                rerank_api([plain.url])
            else:
                qwen([local.url], monkeypatch).preflight()
    line = raised.value.one_line()
    assert "refused the request (HTTP 401)" in line
    if sent:
        assert "VLLM_API_KEY was sent: set it to the key the server was started with" in line
    else:
        assert f"no key was sent: export {variables.get(client, 'VLLM_API_KEY')} with the key" in line


def test_a_tei_that_refuses_its_info_is_named_not_taken_for_another_server():
    with FakeTEI(RERANKER, api_key=KEY) as fake:
        with pytest.raises(ConfigurationError) as raised:
            rerank_api([fake.url])
    assert f"{fake.url}/info refused the request (HTTP 401): no key was sent" in raised.value.one_line()


# -- a replica that stops answering --------------------------------------------------------------------------
def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_rerank_api_names_a_replica_that_stops_answering_once(caplog):
    with FakeOpenAICompatible(RERANKER, max_model_len=512) as live, FakeOpenAICompatible(RERANKER) as dying:
        built = rerank_api([dying.url, live.url])
        dying.script(*[Reply(drop=True) for _ in range(20)])  # from now on it closes every connection unanswered
        with caplog.at_level(logging.INFO, logger="evals_repro.providers.replicas"):
            for _ in range(4):
                assert len(built.rerank("heat pump", ["heat pump noise", "brine"])) == 2
        assert len(live.scored) == 4 and built.ctx.usage.get("rerank-api_retries") == 0
    (line,) = [w for w in warnings(caplog) if "stopped answering" in w]
    assert line.startswith(f"rerank-api {RERANKER}: replica {dying.url} stopped answering (RemoteProtocolError")
    assert line.endswith("; its requests go to the 1 other live replica(s)")


def test_a_local_reranker_fails_over_from_a_dead_replica_without_retries(caplog, monkeypatch):
    with FakeVllm(QWEN_ID, "yes-no") as live, FakeVllm(QWEN_ID, "yes-no") as dying:
        built = qwen([dying.url, live.url], monkeypatch)
        built.preflight()
        dying.script(*[Reply(drop=True) for _ in range(20)])
        with caplog.at_level(logging.WARNING, logger="evals_repro.providers.replicas"):
            for i in range(4):
                assert len(built.rerank(f"query {i}", ["doc one", "doc two"])) == 2
        assert len(live.classify_inputs) == 4
    assert built.ctx.usage.get("qwen3-8b_retries") == 0 and built.ctx.usage.get("qwen3-8b_requests") == 4
    (line,) = warnings(caplog)
    assert line.startswith(f"qwen3-8b: replica {dying.url} stopped answering (RemoteProtocolError")
    assert line.endswith("; its requests go to the 1 other live replica(s)")


def test_a_replica_that_comes_back_is_named_again_only_after_it_answered(caplog):
    from evals_repro.providers.replicas import ReplicaPool

    now = [0.0]
    pool = ReplicaPool(["http://a", "http://b"], clock=lambda: now[0])
    down = OSError("refused")
    sent: list[str] = []

    def send(replica):
        sent.append(replica.url)
        if replica.url == "http://a" and now[0] < 100:
            raise down
        return replica.url

    with caplog.at_level(logging.INFO, logger="evals_repro.providers.replicas"):
        for now[0] in (0.0, 1.0, 31.0, 62.0, 101.0, 102.0):  # a is tried again after 30 s, still down, then back
            pool.call(send, lambda exc: exc is down, "m")
        assert "http://a" in sent[sent.index("http://b") + 1 :]  # retried after REVIVE_SECONDS
    messages = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert messages == [
        (
            "WARNING",
            "m: replica http://a stopped answering (OSError: refused); its requests go to the 1 other live replica(s)",
        ),
        ("INFO", "m: replica http://a answers again"),
    ]

"""`openai:<model>` generators and judges speak through the official openai SDK (providers.clients.openai_client,
its retries off), as the `openai:` embedder does: the same wire format, keys, account headers and error lines."""

from __future__ import annotations

import json

import pytest

from evals_repro.base.errors import ProviderError
from evals_repro.base.usage import Usage
from evals_repro.vidore_paper.llm import ChatClient, GenerationSettings, ModelSpec
from evals_repro.vidore_paper.render import Part
from fakes.base import Reply
from fakes.generators import REASONING_TOKENS, FakeOpenAIChat

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


@pytest.fixture
def server(monkeypatch):
    fake = FakeOpenAIChat(lambda call: "Paris.", key="sk-test")
    with fake:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        for name in ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
            monkeypatch.delenv(name, raising=False)
        yield fake


def client(**generation) -> ChatClient:
    return ChatClient(ModelSpec("openai", "fake-judge"), {"max_attempts": 2}, GenerationSettings(**generation))


def test_a_completion_goes_out_in_the_chat_format_and_its_counts_come_back(server):
    chat = client(temperature=0.0, max_output_tokens=64)
    try:
        done = chat.complete(
            "Be brief.", [Part(text="Capital of France?"), Part(image=PNG, mime_type="image/png")], Usage()
        )
    finally:
        chat.close()
    (request,) = server.requests
    assert request.path == "/v1/chat/completions" and request.headers["authorization"] == "Bearer sk-test"
    assert json.loads(request.body) == {
        "model": "fake-judge",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Capital of France?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAAAAAAAAA=="}},
                ],
            },
        ],
        "temperature": 0.0,
        "max_completion_tokens": 64,
    }
    (count,) = server.reported
    assert (done.text, done.finish_reason) == ("Paris.", "stop")
    assert (done.tokens_in, done.tokens_out, done.reasoning_tokens) == (
        count["prompt"],
        count["output"],
        REASONING_TOKENS,
    )


def test_the_accounts_organization_and_project_reach_openai_as_the_sdk_sends_them(server, monkeypatch):
    """The SDK's own variables: calls are billed to the organization and project the user set, as embeddings are."""
    monkeypatch.setenv("OPENAI_ORG_ID", "org-lab")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-vidore")
    chat = client()
    try:
        chat.complete("", [Part(text="Capital of France?")], Usage())
    finally:
        chat.close()
    (request,) = server.requests
    assert request.headers["openai-organization"] == "org-lab" and request.headers["openai-project"] == "proj-vidore"


def test_a_wrong_key_is_one_line_naming_the_variable(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with pytest.raises(ProviderError) as info:
        client().complete("", [Part(text="q")], Usage())
    line = info.value.one_line()
    assert "rejected (HTTP 401)" in line and "Incorrect API key provided" in line and "OPENAI_API_KEY" in line
    assert "sk-wrong" not in line and len(server.requests) == 1  # not retried


def test_an_answer_of_another_shape_names_the_base_url(server):
    server.script(Reply(200, {"id": "x", "object": "chat.completion", "choices": []}))
    with pytest.raises(ProviderError) as info:
        client().complete("", [Part(text="q")], Usage())
    assert info.value.one_line() == (
        "openai fake-judge: the answer lacks choices[0].message: "
        "the server is not OpenAI-compatible; check OPENAI_BASE_URL (with /v1)"
    )


def test_a_server_of_your_own_bills_nothing_and_passes_max_cost_while_openai_itself_bills(server, monkeypatch):
    """Issue 30 item 8: the embedder's rule (`providers.clients.openai_self_hosted`) for generators and judges."""
    from evals_repro.providers.ceiling import CostCeilingReached, CostGuard, install_guard
    from evals_repro.providers.prices import PriceTable

    def ask(usage: Usage) -> None:
        chat = client()
        try:
            chat.complete("Be brief.", [Part(text="Capital of France?")], usage)
        finally:
            chat.close()

    install_guard(CostGuard(0.01, PriceTable("2026-01-01", "no prices at all")))  # --max-cost 0.01
    try:
        own = Usage()
        ask(own)  # OPENAI_BASE_URL is the fake: a server of your own, never refused for its unknown price
        assert own.billed() == {} and own.served() == {("openai", "fake-judge"): 1}
        monkeypatch.setattr("evals_repro.providers.clients.OPENAI_DEFAULT_BASE_URL", f"{server.url}/v1")
        with pytest.raises(CostCeilingReached, match="price unknown for openai fake-judge"):
            ask(Usage())  # the fake now stands in for OpenAI itself: an unpriced model cannot be bounded
        assert len(server.requests) == 1  # refused before it was sent
    finally:
        install_guard(None)
    paid = Usage()
    ask(paid)
    count = server.reported[-1]
    assert paid.served() == {}
    assert paid.billed() == {
        ("openai", "fake-judge", "input_tokens"): count["prompt"],
        ("openai", "fake-judge", "output_tokens"): count["output"],
    }

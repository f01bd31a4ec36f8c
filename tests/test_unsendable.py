"""A key the HTTP stack refuses to put in a header (a pasted newline) is `unsendable` for every SDK, found from
the stack's own exception (httpx, httpx2, requests) in the chain: never retried, never a connection failure."""

from __future__ import annotations

import dataclasses
import http.server
import threading

import pytest

from evals_repro.providers import clients
from evals_repro.providers.errors_map import UNSENDABLE, classify
from evals_repro.providers.settings import KEY_ENV, provider_settings


class Counting(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802  (no request may arrive: the header never leaves the client)
        raise AssertionError("a request with a refused header reached the server")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


KEY = "sk-first-half\nsecond-half"


def settings(provider: str, base_url: str):
    return dataclasses.replace(provider_settings(provider), base_url=base_url, timeout=5.0)


CALLS = {
    "openai": lambda url: clients.openai_client(settings("openai", f"{url}/v1"), None, KEY).embeddings.create(
        model="m", input=["x"]
    ),
    "cohere": lambda url: clients.cohere_client(settings("cohere", url), KEY).embed(
        model="m", texts=["x"], input_type="search_query", embedding_types=["float"]
    ),
    "voyage": lambda url: clients.voyage_client(settings("voyage", f"{url}/v1"), KEY).embed(["x"], model="m"),
    "mixedbread": lambda url: clients.mixedbread_client(settings("mixedbread", url), KEY).embed(model="m", input=["x"]),
}


@pytest.mark.parametrize("provider", sorted(CALLS))
def test_a_key_with_a_newline_is_unsendable(url, provider, monkeypatch):
    monkeypatch.setenv(KEY_ENV[provider], KEY)  # where a user's key comes from (and what redaction knows)
    with pytest.raises(Exception) as info:
        CALLS[provider](url)
    failure = classify(provider, info.value)
    assert failure is not None and failure.kind == UNSENDABLE and not failure.retryable
    assert "second-half" not in failure.message and "could not send the request" in failure.message


def test_a_key_with_a_newline_is_unsendable_for_gemini(url, monkeypatch):
    monkeypatch.setenv(KEY_ENV["gemini"], KEY)
    client = clients.gemini_client(settings("gemini", url), KEY)  # kept referenced while in use
    with pytest.raises(Exception) as info:
        client.models.embed_content(model="m", contents=["x"])
    failure = classify("gemini", info.value)
    assert failure is not None and failure.kind == UNSENDABLE and not failure.retryable

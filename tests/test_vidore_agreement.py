"""`grounding agreement` on the hub fixtures (hr and energy), against hand-computed zone areas.

hr (native english, questions 0 and 2):
- q0 page 0, Text: [10,60)x[10,40) vs [20,70)x[10,40): I 1200, U 1800 -> IoU 2/3, F1 2400/3000 = 0.8
- q0 page 2, Table, three annotators: [0,50)^2, [10,40)^2 (nested), [60,90)^2 (disjoint):
  pairs (IoU 0.36, F1 1800/3400), (0, 0), (0, 0) -> IoU 0.12, F1 (18/34)/3
- q2 page 3: {Chart [0,40)x[0,40), Table [50,90)x[0,40)} (3200) vs Chart [20,70)x[0,40) (2000):
  I 800 + 800 = 1600, U 3600 -> IoU 4/9, F1 3200/5200 = 8/13;
  Chart only: 1600 vs 2000, I 800, U 2800 -> IoU 2/7, F1 1600/3600 = 4/9 (Table: one annotator)
- q2 page 4: one annotator (not scored); q2 page 1: no boxes
energy (native french, question 1): page 0 identical Text zones (1, 1); page 1 disjoint Image zones (0, 0).
"""

from __future__ import annotations

import json

import pytest

import hub_fixtures as fx
from evals_repro.base.errors import UsageError
from evals_repro.cli import main
from evals_repro.vidore_paper.agreement import AgreementRequest, run_agreement

HR_IOU = [2 / 3, 0.12, 4 / 9]
HR_F1 = [0.8, 18 / 34 / 3, 8 / 13]
ENERGY = [1.0, 0.0]


@pytest.fixture(scope="module")
def hub(fake_hub):
    return fx.install(fake_hub)


def mean(values):
    return sum(values) / len(values)


def test_agreement_per_domain_modality_and_overall(hub, tmp_path):
    result = run_agreement(AgreementRequest(subsets=["hr", "energy"], out_dir=tmp_path), echo=lambda _: None)
    hr, energy = result["subsets"]["hr"], result["subsets"]["energy"]
    assert hr["language"] == "english" and energy["language"] == "french"
    assert hr["pairs"] == 3 and hr["pairs_by_annotators"] == {"2": 2, "3": 1}
    assert hr["single_annotator_pairs"] == 1 and hr["pairs_without_boxes"] == 1
    assert hr["iou"] == pytest.approx(mean(HR_IOU)) and hr["f1"] == pytest.approx(mean(HR_F1))
    assert [p[:3] for p in hr["scored_pairs"]] == [["0", "0", 2], ["0", "2", 3], ["2", "3", 2]]
    assert energy["iou"] == pytest.approx(0.5) and energy["f1"] == pytest.approx(0.5)
    assert result["overall"]["pairs"] == 5
    assert result["overall"]["iou"] == pytest.approx(mean(HR_IOU + ENERGY))
    assert result["overall"]["f1"] == pytest.approx(mean(HR_F1 + ENERGY))
    assert result["macro"]["iou"] == pytest.approx((mean(HR_IOU) + 0.5) / 2)
    assert result["macro"]["f1"] == pytest.approx((mean(HR_F1) + 0.5) / 2)
    modalities = result["modalities"]
    assert modalities["Text"] == {"pairs": 2, "iou": pytest.approx((2 / 3 + 1) / 2), "f1": pytest.approx(0.9)}
    assert modalities["Table"] == {"pairs": 1, "iou": pytest.approx(0.12), "f1": pytest.approx(18 / 34 / 3)}
    assert modalities["Chart"] == {"pairs": 1, "iou": pytest.approx(2 / 7), "f1": pytest.approx(4 / 9)}
    assert modalities["Image"] == {"pairs": 1, "iou": 0.0, "f1": 0.0}
    assert result["published"]["iou"] == 0.50 and result["published"]["f1"] == 0.60
    assert result["comparison"]["delta_macro_f1"] == pytest.approx(round((mean(HR_F1) + 0.5) / 2 - 0.60, 4))
    written = json.loads((tmp_path / "grounding-agreement.json").read_text())
    assert written["overall"] == json.loads(json.dumps(result["overall"])) and written["complete"] is True
    table = (tmp_path / "grounding-agreement.md").read_text()
    assert "| hr | 3 | 2 / 1 | 0.410 | 0.531 |" in table and "| energy | 2 | 2 / 0 | 0.500 | 0.500 |" in table


def test_agreement_in_another_language_counts_the_same_questions(hub, tmp_path):
    result = run_agreement(
        AgreementRequest(subsets=["energy"], language="english", out_dir=tmp_path), echo=lambda _: None
    )
    assert result["subsets"]["energy"]["language"] == "english"
    assert [p[:2] for p in result["subsets"]["energy"]["scored_pairs"]] == [["2", "0"], ["2", "1"]]
    assert result["overall"]["iou"] == pytest.approx(0.5)


def test_agreement_cli_prints_the_table_and_refuses_other_layouts(hub, tmp_path, capsys):
    code = main(["grounding", "agreement", "-s", "hr", "--out-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "| hr | 3 | 2 / 1 | 0.410 | 0.531 |" in out and "| paper, 10 datasets" in out
    assert main(["grounding", "agreement", "-b", "sample"]) == 2
    assert "has no answers or bounding boxes" in capsys.readouterr().err
    with pytest.raises(UsageError, match="no klingon queries"):
        run_agreement(AgreementRequest(subsets=["hr"], language="klingon", out_dir=tmp_path))

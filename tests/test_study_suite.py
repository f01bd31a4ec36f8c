"""The full study by default: `rerank-study prepare` with no --benchmark covers the seven groups
(text, financebench, legalragbench, cure, freshstack, followir, vidore-v3), all served offline
(fake Hub, ir_datasets cache); `report` shows every group, the overall column and blanks where a
group is incomplete; the latency plan takes 20 queries per dataset (5,200 calls by default)."""

from __future__ import annotations

import csv
import json

import pytest

import scripted_method
import study_fixtures as sfx
import text_fixtures as tfx
from evals_repro.base.registry import RERANKERS
from evals_repro.benchmarks import list_benchmarks
from evals_repro.cli import main
from evals_repro.study.candidates import Candidate
from evals_repro.study.latency import LatencyRequest, make_plan, schedule
from evals_repro.study.models import DEFAULT_MODELS, parse_models
from evals_repro.study.prepare import settings_of

GROUPS = ["cure", "financebench", "followir", "freshstack", "legalragbench", "text", "vidore-v3"]


@pytest.fixture(scope="module")
def suite(fake_hub, irds_home, tmp_path_factory):
    sfx.install(fake_hub)
    tfx.install(fake_hub)
    root = tmp_path_factory.mktemp("suite")
    code = main(
        [
            "rerank-study",
            "prepare",
            "--first-stage",
            "bm25",  # ViDoRe's alternative to its Markdown store; every other benchmark's own
            "--study-dir",
            str(root / "study"),
            "--cache-dir",
            str(root / "cache"),
        ]
    )
    assert code == 0
    return root


def overall_table(report: str) -> tuple[list[str], dict[str, list[str]]]:
    lines = report.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("## Overall quality")))
    header = [c.strip() for c in lines[start + 2].strip("|").split("|")]
    rows = {}
    for line in lines[start + 4 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip(" *") for c in line.strip("|").split("|")]  # a column's best value is bold
        rows[cells[0]] = cells[1:]
    return header[1:], rows


def test_default_prepare_covers_the_seven_groups(suite):
    manifest = json.loads((suite / "study" / "manifest.json").read_text())
    assert sorted(manifest["suite"]) == GROUPS
    groups = {e["study"]["group"] for e in manifest["datasets"].values()}
    assert groups == set(GROUPS)
    firsts = {e["benchmark"]: e["first_stage"] for e in manifest["datasets"].values()}
    assert set(firsts.values()) == {"bm25"}
    text = sorted(e["subset"] for e in manifest["datasets"].values() if e["benchmark"] == "text")
    assert text == ["dl19", "dl20", "fiqa", "hotpotqa", "nq", "scifact", "trec-covid"]
    assert sum(e["benchmark"] == "cure" for e in manifest["datasets"].values()) == 10


def test_report_shows_every_group_overall_and_blanks(suite, capsys, registered):
    registered(RERANKERS, "overlap", scripted_method.build_overlap)  # offline and fast: minilm takes minutes here
    study = str(suite / "study")
    # score every group but ViDoRe: its cell and the overall stay blank for the model
    partial = [arg for g in GROUPS if g != "vidore-v3" for arg in ("--benchmark", g)]
    cache = ["--cache-dir", str(suite / "cache")]
    assert main(["rerank-study", "quality", "--models", "overlap", "--study-dir", study, *cache, *partial]) == 0
    assert main(["rerank-study", "report", "--study-dir", study, "--resamples", "50"]) == 0
    report = (suite / "study" / "report.md").read_text()
    header, rows = overall_table(report)
    assert header == [*GROUPS, "overall"]  # the suite's groups in declaration order, then overall
    baseline, model = rows["first stage"], rows["overlap"]
    assert all(cell for cell in baseline)  # the frozen first stage is complete everywhere
    vidore = header.index("vidore-v3")
    assert model[vidore] == "" and model[-1] == ""  # incomplete group, so no overall
    assert all(cell for i, cell in enumerate(model[:-1]) if i != vidore)
    assert "freshstack: alpha_ndcg_at_10" in report

    assert main(["rerank-study", "quality", "--models", "overlap", "--study-dir", study, *cache]) == 0
    assert main(["rerank-study", "report", "--study-dir", study, "--resamples", "50"]) == 0
    header, rows = overall_table((suite / "study" / "report.md").read_text())
    cells = [float(c) for c in rows["overlap"]]
    assert cells[-1] == pytest.approx(sum(cells[:-1]) / 7, abs=0.06)  # groups weigh equally

    table = list(csv.DictReader((suite / "study" / "quality.csv").open()))
    datasets = {(r["dataset"], r["subset"]) for r in table}
    assert len(datasets) == 7 + 1 + 1 + 10 + 5 + 3 + 8  # every dataset/subset
    metrics = {r["dataset"]: set() for r in table}
    for r in table:
        metrics[r["dataset"]].add(r["metric"])
    assert {"alpha_ndcg_at_10", "nugget_coverage_at_20"} <= metrics["freshstack"]
    assert {"p_mrr", "ndcg_at_10[og]", "map[changed]"} <= metrics["followir"]


def test_quality_first_stage_is_checked_against_what_was_prepared(suite, capsys):
    study = str(suite / "study")
    args = ["rerank-study", "quality", "--models", "minilm", "--first-stage", "mixedbread-markdown"]
    code = main([*args, "--study-dir", study])
    err = capsys.readouterr().err
    assert code == 2 and "vidore-v3 candidates" in err and "frozen with bm25" in err


def test_latency_plan_takes_20_per_dataset_and_5200_calls_by_default():
    decls = [d for d in list_benchmarks() if d.study]
    assert sorted({settings_of(d).group for d in decls}) == GROUPS
    items, units = [], {}
    for decl in decls:
        units[decl.name] = settings_of(decl).latency_unit
        for subset in decl.subset_names:
            for n in range(30):
                items.append((Candidate(decl.name, subset, f"{subset}-{n}", "q", [], [], {}, "r", "c"), {}))
    request = LatencyRequest()
    plan = make_plan(items, request.samples, request.repeats, request.seed, units)
    per = {b: {s: len(ids) for s, ids in subsets.items()} for b, subsets in plan["queries"].items()}
    assert set(per["text"].values()) == {20} and len(per["text"]) == 7
    assert set(per["cure"].values()) == {2} and set(per["freshstack"].values()) == {4}
    for bench in ("financebench", "legalragbench", "followir", "vidore-v3"):
        assert sum(per[bench].values()) == 20
    datasets = 7 + 6
    assert sum(sum(v.values()) for v in per.values()) == 20 * datasets == 260
    calls = schedule(plan, parse_models(list(DEFAULT_MODELS)))
    assert len(calls) == 260 * request.repeats * len(DEFAULT_MODELS) == 5200

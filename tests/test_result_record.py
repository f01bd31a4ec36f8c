"""The result record through the CLI: what --resume keeps, re-scores or reruns; saved runs; damaged files;
the exported JSON Schema; failures that do not stop a run; the Python API."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import jsonschema
import pytest

import evals_repro
import scripted_method
from evals_repro.base.registry import METHODS
from evals_repro.cli import main
from evals_repro.records.results import ResultRecord

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "schemas" / "result-record.schema.json"
INV_LOG2_3 = 1 / math.log2(3)


def write_folder(root: Path, name: str, qrels: str) -> Path:
    """A BEIR folder: 4 pages, 2 English queries; `qrels` is the test.tsv body."""
    sub = root / name
    (sub / "qrels").mkdir(parents=True)
    pages = [{"_id": f"d{i}", "title": "", "text": f"page {i} about topic {i}"} for i in range(4)]
    (sub / "corpus.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pages))
    queries = [{"_id": "q1", "text": "one"}, {"_id": "q2", "text": "two"}]
    (sub / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (sub / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return sub


@pytest.fixture
def folder(tmp_path, monkeypatch, registered):
    """One subset `alpha`; the scripted method ranks d0, d1 for q1 and d2 for q2."""
    data = tmp_path / "bench"
    write_folder(data, "alpha", "q1\td1\t1\nq2\td2\t1\n")
    registered(METHODS, "scripted", scripted_method.build)
    monkeypatch.setattr(scripted_method, "SCRIPT", {"q1": ["d0", "d1"], "q2": ["d2"]})
    monkeypatch.setattr(scripted_method, "FAIL_ON_SUBSET", set())
    return data


def cli(folder: Path, tmp_path: Path, *extra: str, method: str = "scripted") -> int:
    return main(
        [
            "run", method, "--benchmark", str(folder), "--results-dir", str(tmp_path / "results"),
            "--cache-dir", str(tmp_path / "cache"), *extra,
        ]
    )  # fmt: skip


def stored(tmp_path: Path, subset: str = "alpha", method: str = "scripted") -> dict:
    return json.loads((tmp_path / "results" / "bench" / method / f"{subset}.json").read_text())


def test_resume_reruns_when_the_qrels_changed(folder, tmp_path, capsys):
    assert cli(folder, tmp_path) == 0
    # q1's relevant page at rank 2, q2's at rank 1
    assert stored(tmp_path)["metrics"]["ndcg_at_10"] == pytest.approx((INV_LOG2_3 + 1) / 2)
    (folder / "alpha" / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td3\t1\nq2\td2\t1\n")
    capsys.readouterr()
    assert cli(folder, tmp_path, "--resume") == 0
    assert "the data changed since" in capsys.readouterr().err
    assert stored(tmp_path)["metrics"]["ndcg_at_10"] == pytest.approx((0 + 1) / 2)  # q1's page no longer retrieved


def test_resume_with_a_new_measure_rescores_the_saved_run_and_report_shows_it(folder, tmp_path, capsys):
    assert cli(folder, tmp_path) == 0
    scripted_method.SCRIPT.clear()  # were the method called again, every query would score 0
    capsys.readouterr()
    assert cli(folder, tmp_path, "--resume", "-m", "recall_at_1000") == 0
    assert "re-scoring the saved run (it lacks recall_at_1000)" in capsys.readouterr().err
    record = stored(tmp_path)
    assert record["metrics"]["recall_at_1000"] == 1.0
    assert record["metrics"]["ndcg_at_10"] == pytest.approx((INV_LOG2_3 + 1) / 2)  # the measures it had are kept
    capsys.readouterr()
    assert main(["report", "-b", str(folder), "-m", "recall_at_1000", "--results-dir", str(tmp_path / "results")]) == 0
    assert "| scripted | 100.0 | 100.0 |" in capsys.readouterr().out
    assert cli(folder, tmp_path, "--resume", "-m", "recall_at_1000") == 0
    assert "complete result kept" in capsys.readouterr().err


def test_a_run_with_one_measure_keeps_every_measure_already_computed(folder, tmp_path):
    assert cli(folder, tmp_path) == 0
    before = stored(tmp_path)["metrics"]
    assert cli(folder, tmp_path, "-m", "ndcg_at_7") == 0
    after = stored(tmp_path)["metrics"]
    assert set(after) == set(before) | {"ndcg_at_7"}
    assert after["ndcg_at_7"] == pytest.approx((INV_LOG2_3 + 1) / 2)


def test_saved_run_is_trec_format_in_trec_order_and_evaluate_rescores_it(folder, tmp_path, capsys):
    assert cli(folder, tmp_path) == 0
    record = stored(tmp_path)
    run_file = tmp_path / "results/bench/scripted" / record["run"]["path"]
    lines = gzip.decompress(run_file.read_bytes()).decode().splitlines()
    assert lines == ["q1 Q0 d0 1 2.0 scripted", "q1 Q0 d1 2 1.0 scripted", "q2 Q0 d2 1 1.0 scripted"]
    qrels = gzip.decompress((run_file.parent / record["run"]["qrels_path"]).read_bytes()).decode().splitlines()
    assert qrels == ["q1 0 d1 1", "q2 0 d2 1"]
    capsys.readouterr()
    path = tmp_path / "results/bench/scripted/alpha.json"
    assert main(["evaluate", "--result", str(path), "-m", "ndcg_at_10,mrr_at_10"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["num_q", "all", "2"]
    assert float(out[1].split()[2]) == pytest.approx((INV_LOG2_3 + 1) / 2, abs=1e-4)
    assert float(out[2].split()[2]) == pytest.approx((0.5 + 1) / 2, abs=1e-4)
    run_file.write_bytes(gzip.compress(b"q1 Q0 d1 1 9.0 x\n"))  # tampered: refused in one line
    assert main(["evaluate", "--result", str(path)]) == 2
    assert "changed since" in capsys.readouterr().err


def test_report_names_a_truncated_result_file(folder, tmp_path, capsys):
    assert cli(folder, tmp_path) == 0
    path = tmp_path / "results/bench/scripted/alpha.json"
    path.write_text(path.read_text()[:200])
    capsys.readouterr()
    assert main(["report", "-b", str(folder), "--results-dir", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and "not valid JSON" in err
    assert "--resume" in err and "delete" not in err  # the advice is the one that works: resume recomputes it
    capsys.readouterr()
    assert cli(folder, tmp_path, "--resume") == 0
    assert stored(tmp_path)["method"] == "scripted"


def test_a_result_field_of_the_wrong_type_is_named(folder, tmp_path, capsys):
    assert cli(folder, tmp_path) == 0
    path = tmp_path / "results/bench/scripted/alpha.json"
    data = json.loads(path.read_text())
    data["method"] = 7
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["report", "-b", str(folder), "--results-dir", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}: result file field 'method' is invalid" in err and "Traceback" not in err
    capsys.readouterr()
    assert cli(folder, tmp_path, "--resume") == 0  # a damaged file is recomputed, not trusted
    assert stored(tmp_path)["method"] == "scripted"


def test_failing_subsets_do_not_stop_the_run_and_each_is_named(tmp_path, monkeypatch, registered, capsys):
    data = tmp_path / "bench"
    for name in ("alpha", "beta", "gamma"):
        write_folder(data, name, "q1\td1\t1\n")
    registered(METHODS, "scripted", scripted_method.build)
    monkeypatch.setattr(scripted_method, "SCRIPT", {"q1": ["d1"]})
    monkeypatch.setattr(scripted_method, "FAIL_ON_SUBSET", {"alpha", "gamma"})
    assert cli(data, tmp_path) == 4
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last == (
        "error: 2 of 3 subsets failed: RuntimeError: scripted failure on alpha (alpha); RuntimeError: scripted failure "
        "on gamma (gamma): fix each, then rerun with --resume (it runs only those)"
    )
    assert (tmp_path / "results/bench/scripted/beta.json").exists()
    assert not (tmp_path / "results/bench/scripted/alpha.json").exists()


def test_exported_schema_is_current_and_validates_a_real_result(tmp_path):
    assert SCHEMA.exists(), "export it: uv run python -c 'from evals_repro.records.results import export_schema; ...'"
    schema = json.loads(SCHEMA.read_text())
    assert schema == json.loads(json.dumps(ResultRecord.model_json_schema(), sort_keys=True))
    summary = evals_repro.run(
        "bm25", "sample", subsets=["heat-pumps"], results_dir=tmp_path / "r", cache_dir=tmp_path / "c"
    )
    assert [o.status for o in summary.outcomes] == ["written"]
    document = json.loads((tmp_path / "r/sample/bm25/heat-pumps.json").read_text())
    jsonschema.validate(document, schema)
    document["setting"] = "bilingual"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, schema)


def test_python_api_evaluate_matches_hand_values():
    scores = evals_repro.evaluate(
        {"q1": {"d1": 1}, "q2": {"d2": 1}}, {"q1": {"d0": 2.0, "d1": 1.0}, "q2": {}}, ["ndcg_at_10", "mrr_at_10"]
    )
    assert scores.per_query["q1"]["ndcg_at_10"] == pytest.approx(INV_LOG2_3)
    assert scores.per_query["q2"] == {"ndcg_at_10": 0.0, "mrr_at_10": 0.0}
    assert scores.mean["mrr_at_10"] == pytest.approx(0.25)


def test_a_result_is_parsed_once_and_again_when_its_bytes_change(folder, tmp_path, monkeypatch):
    """`report` reads every result for its tables, then for its comparisons: one parse per file content."""
    from evals_repro.records import results

    assert cli(folder, tmp_path) == 0
    path = tmp_path / "results/bench/scripted/alpha.json"
    parses = []
    parse = ResultRecord.model_validate_json
    monkeypatch.setattr(ResultRecord, "model_validate_json", lambda text: parses.append(1) or parse(text))
    results._READ.clear()
    first = results.load_record(path)
    assert results.load_record(path) is first and len(parses) == 1
    data = json.loads(path.read_text())
    data["metrics"]["ndcg_at_10"] = 0.25 if first.metrics["ndcg_at_10"] != 0.25 else 0.5
    path.write_text(json.dumps(data))  # in place, the same inode: its bytes tell it changed
    again = results.load_record(path)
    assert again.metrics["ndcg_at_10"] == data["metrics"]["ndcg_at_10"] and len(parses) == 2


def test_report_parses_each_result_file_once(folder, tmp_path, monkeypatch, capsys):
    """Once, for its tables, comparisons and figures alike, keeping the per-query scores of the measure it shows."""
    from evals_repro.records import results

    assert cli(folder, tmp_path) == 0
    parses = []
    for name in ("_parse", "_validated"):
        original = getattr(results, name)
        monkeypatch.setattr(results, name, lambda *a, original=original, name=name: parses.append(name) or original(*a))
    results._READ.clear()
    assert main(["report", "-b", str(folder), "--results-dir", str(tmp_path / "results"), "--compare"]) == 0
    files = list((tmp_path / "results").rglob("*.json"))
    assert len(parses) == len(files) == 1
    (record,) = [record for _, record in results._READ.values()]
    assert {name for entry in record.per_query.values() for name in entry.metrics} == {"ndcg_at_10"}
    assert set(record.metrics) == set(stored(tmp_path)["metrics"])  # the rest of the record is whole


def test_report_reads_the_per_query_scores_it_shows(folder, tmp_path, capsys):
    """`report -m` keeps each query's score of the measures it shows and skips the others: a damaged score of a
    kept measure is named as any damaged field is; one of a skipped measure is what `report` does not read (any
    other reader of the record, which reads it whole, names it)."""
    from evals_repro.records import results

    assert cli(folder, tmp_path) == 0
    path = tmp_path / "results/bench/scripted/alpha.json"
    data = json.loads(path.read_text())
    data["per_query"]["q1"]["metrics"]["recall_at_100"] = "lots"
    path.write_text(json.dumps(data))
    results._READ.clear()
    report = ["report", "-b", str(folder), "--results-dir", str(tmp_path / "results"), "--baseline", "scripted"]
    assert main([*report, "-m", "ndcg_at_10"]) == 0
    assert main([*report, "-m", "recall_at_100"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"error: {path}: result file field 'per_query.q1.metrics.recall_at_100' is invalid")
    with pytest.raises(results.DamagedResult, match="recall_at_100"):
        results.load_record(path)


def test_reading_results_freezes_no_garbage_and_keeps_a_collector_turned_off(folder, tmp_path):
    """The records read are frozen out of the cyclic collector's sight; garbage cycles made before are collected
    first, not frozen with them (automatic collection is off here, so only that collection can free the cycle)."""
    import gc
    import weakref

    from evals_repro.records import results

    assert cli(folder, tmp_path) == 0

    class Node:
        pass

    thresholds = gc.get_threshold()
    gc.set_threshold(0)
    try:
        node = Node()
        node.self = node  # type: ignore[attr-defined]
        alive = weakref.ref(node)
        del node
        results._READ.clear()
        assert len(results.scan_records(tmp_path / "results", "bench")) == 1
        assert alive() is None and gc.isenabled() and gc.get_freeze_count() > 0
        gc.unfreeze()
        gc.disable()
        results._READ.clear()
        assert len(results.scan_records(tmp_path / "results", "bench")) == 1
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def test_a_result_file_that_is_not_utf8_is_named_in_one_line(folder, tmp_path, capsys):
    assert cli(folder, tmp_path) == 0
    path = tmp_path / "results/bench/scripted/alpha.json"
    path.write_bytes(b'{"schema_version": 2, "method": "caf\xe9"}')
    capsys.readouterr()
    assert main(["report", "-b", str(folder), "--results-dir", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}: result file is damaged (not UTF-8)") and len(err.splitlines()) == 1

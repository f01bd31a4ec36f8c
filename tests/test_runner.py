"""run -> result file -> report, with hand-computed metric values."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import scripted_method
from evals_repro.base.registry import METHODS
from evals_repro.cli import main
from evals_repro.reporting.report import build_tables, to_csv, to_markdown
from evals_repro.runner.evaluation import run_benchmark
from evals_repro.runner.run_request import RunRequest

INV_LOG2_3 = 1 / math.log2(3)


def write_beir(folder: Path, name: str) -> Path:
    sub = folder / name
    (sub / "qrels").mkdir(parents=True)
    pages = [{"_id": f"d{i}", "title": "", "text": f"page {i} about topic {i}"} for i in range(4)]
    (sub / "corpus.jsonl").write_text("\n".join(json.dumps(p) for p in pages) + "\n")
    queries = [
        {"_id": "q1-en", "text": "one", "language": "english", "metadata": {"query_type": ["extractive"]}},
        {"_id": "q1-fr", "text": "un", "language": "french", "metadata": {"query_type": ["extractive"]}},
        {"_id": "q2-en", "text": "two", "language": "english", "metadata": {"query_type": ["numerical"]}},
        {"_id": "q2-fr", "text": "deux", "language": "french", "metadata": {"query_type": ["numerical"]}},
    ]
    (sub / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    (sub / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1-en\td1\t2\nq1-fr\td1\t2\nq2-en\td2\t1\nq2-fr\td2\t1\n"
    )
    return sub


@pytest.fixture
def suite(tmp_path, monkeypatch, registered):
    """A two-subset BEIR folder and the scripted method registered as `scripted`."""
    data = tmp_path / "mybench"
    write_beir(data, "alpha")
    write_beir(data, "beta")
    registered(METHODS, "scripted", scripted_method.build)
    monkeypatch.setattr(
        scripted_method,
        "SCRIPT",
        {
            "q1-en": ["d0", "d1"],  # relevant at rank 2: nDCG@10 = (2/log2 3) / 2
            "q1-fr": ["d1"],  # perfect: 1
            "q2-en": [],  # judged, no results: 0 and kept in the mean
            "q2-fr": ["d2", "d3"],  # perfect: 1
        },
    )
    monkeypatch.setattr(scripted_method, "FAIL_ON_SUBSET", set())
    return data


def request(data: Path, tmp_path: Path, **kw) -> RunRequest:
    return RunRequest(
        method="scripted", benchmark=str(data), results_dir=tmp_path / "results", cache_dir=tmp_path / "cache", **kw
    )


def test_monolingual_scores_native_language_only(suite, tmp_path):
    summary = run_benchmark(request(suite, tmp_path), echo=lambda _: None)
    assert [o.status for o in summary.outcomes] == ["written", "written"]
    result = json.loads((tmp_path / "results/mybench/scripted/alpha.json").read_text())
    assert result["complete"] is True and result["setting"] == "monolingual"
    assert set(result["languages"]) == {"english"}
    assert result["metrics"]["ndcg_at_10"] == pytest.approx((INV_LOG2_3 + 0) / 2)
    assert result["per_query"]["q2-en"]["metrics"]["ndcg_at_10"] == 0
    assert result["per_query"]["q1-en"]["metadata"] == {"query_type": ["extractive"]}
    assert result["metrics"]["mrr_at_10"] == pytest.approx((0.5 + 0) / 2)


def test_crosslingual_averages_languages(suite, tmp_path):
    run_benchmark(request(suite, tmp_path, setting="crosslingual"), echo=lambda _: None)
    result = json.loads((tmp_path / "results/mybench/scripted/beta.json").read_text())
    english = (INV_LOG2_3 + 0) / 2
    french = 1.0
    assert result["languages"]["english"]["metrics"]["ndcg_at_10"] == pytest.approx(english)
    assert result["languages"]["french"]["metrics"]["ndcg_at_10"] == pytest.approx(french)
    assert result["metrics"]["ndcg_at_10"] == pytest.approx((english + french) / 2)
    assert result["languages"]["french"]["n_queries"] == 2


def test_failing_subset_does_not_stop_the_others_and_resume_skips_complete(suite, tmp_path):
    scripted_method.FAIL_ON_SUBSET.add("alpha")
    summary = run_benchmark(request(suite, tmp_path), echo=lambda _: None)
    assert [o.status for o in summary.outcomes] == ["failed", "written"]
    assert "scripted failure on alpha" in summary.failures[0].reason
    beta = tmp_path / "results/mybench/scripted/beta.json"
    assert json.loads(beta.read_text())["complete"] is True
    assert not (tmp_path / "results/mybench/scripted/alpha.json").exists()
    stamp = beta.stat().st_mtime_ns
    scripted_method.FAIL_ON_SUBSET.clear()
    summary = run_benchmark(request(suite, tmp_path, resume=True), echo=lambda _: None)
    assert [o.status for o in summary.outcomes] == ["written", "skipped"]
    assert beta.stat().st_mtime_ns == stamp
    # a crosslingual result satisfies a monolingual resume, not the reverse
    summary = run_benchmark(request(suite, tmp_path, resume=True, setting="crosslingual"), echo=lambda _: None)
    assert [o.status for o in summary.outcomes] == ["written", "written"]
    summary = run_benchmark(request(suite, tmp_path, resume=True), echo=lambda _: None)
    assert [o.status for o in summary.outcomes] == ["skipped", "skipped"]


def test_incomplete_file_is_recomputed_on_resume(suite, tmp_path):
    path = tmp_path / "results/mybench/scripted/alpha.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"complete": false, "metrics": {}')
    summary = run_benchmark(request(suite, tmp_path, resume=True, subsets=["alpha"]), echo=lambda _: None)
    assert summary.outcomes[0].status == "written"
    assert json.loads(path.read_text())["complete"] is True


def test_report_avg_only_when_every_subset_present(suite, tmp_path):
    run_benchmark(request(suite, tmp_path, subsets=["alpha"], setting="crosslingual"), echo=lambda _: None)
    mono, cross = build_tables(tmp_path / "results", "mybench", ["alpha", "beta"])
    assert mono.rows == [("scripted", [pytest.approx(INV_LOG2_3 / 2), None, None])]
    run_benchmark(request(suite, tmp_path, subsets=["beta"], setting="crosslingual"), echo=lambda _: None)
    mono, cross = build_tables(tmp_path / "results", "mybench", ["alpha", "beta"])
    expected = ((INV_LOG2_3 / 2) + 1.0) / 2
    assert cross.rows == [("scripted", [pytest.approx(expected)] * 3)]
    text = to_markdown(cross)
    assert f"| scripted | {expected * 100:.1f} | {expected * 100:.1f} | {expected * 100:.1f} |" in text
    assert to_csv([mono, cross]).splitlines()[0] == "table,method,alpha,beta,avg"


def test_report_first_stage_only_hides_reranked(suite, tmp_path):
    run_benchmark(request(suite, tmp_path), echo=lambda _: None)
    fake = json.loads((tmp_path / "results/mybench/scripted/alpha.json").read_text())
    fake.update(method="scripted+x@5", reranked=True, first_stage="scripted")
    target = tmp_path / "results/mybench/scripted+x@5/alpha.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(fake))
    mono, _ = build_tables(tmp_path / "results", "mybench", ["alpha", "beta"])
    assert [m for m, _ in mono.rows] == ["scripted", "scripted+x@5"]
    mono, _ = build_tables(tmp_path / "results", "mybench", ["alpha", "beta"], first_stage_only=True)
    assert [m for m, _ in mono.rows] == ["scripted"]


@pytest.mark.parametrize(
    "args, needle",
    [
        (["run", "no-such-method", "--benchmark", "sample"], "unknown method 'no-such-method'"),
        (["run", "bm25", "--benchmark", "no-such-bench"], "unknown benchmark 'no-such-bench'"),
        (["run", "bm25", "--setting", "sideways"], "'sideways' is not one of 'monolingual', 'crosslingual'"),
        (["run", "bm25", "--content", "video"], "'video' is not one of 'markdown', 'images'"),
    ],
)
def test_bad_input_is_one_line(args, needle, capsys):
    code = main(args)
    err = capsys.readouterr().err
    assert code != 0
    assert needle in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unknown_subset_names_choices(suite, tmp_path, capsys):
    code = main(
        ["run", "scripted", "--benchmark", str(suite), "--subsets", "gamma", "--results-dir", str(tmp_path / "r")]
    )
    err = capsys.readouterr().err
    assert code == 2 and "unknown subset 'gamma'" in err and "alpha, beta" in err


def test_killed_run_leaves_no_partial_file(suite, tmp_path):
    """SIGKILL mid-run: finished subsets are complete files, the rest absent, no stray .json."""
    code = (
        "import sys, scripted_method; from evals_repro.base.registry import METHODS; "
        "METHODS.register('scripted')(scripted_method.build); "
        "from evals_repro.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = dict(os.environ, SCRIPTED_HOLD="beta", PYTHONPATH=str(Path(__file__).parent))  # beta never ends
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            code,
            "run",
            "scripted",
            "--benchmark",
            str(suite),
            "--results-dir",
            str(tmp_path / "results"),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    alpha = tmp_path / "results/mybench/scripted/alpha.json"
    deadline = time.time() + 30
    while not alpha.exists() and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    files = sorted(p.name for p in alpha.parent.iterdir())
    assert [f for f in files if f.endswith(".json")] == ["alpha.json"]
    assert json.loads(alpha.read_text())["complete"] is True


def test_run_keeps_a_judged_query_without_relevant_documents(suite, tmp_path, monkeypatch):
    """trec_eval counts every judged query: q3-en (grade 0 only) scores 0 and stays in the mean and n_queries."""
    alpha = suite / "alpha"
    with open(alpha / "queries.jsonl", "a") as handle:
        handle.write(json.dumps({"_id": "q3-en", "text": "three", "language": "english", "metadata": {}}) + "\n")
    with open(alpha / "qrels" / "test.tsv", "a") as handle:
        handle.write("q3-en\td3\t0\n")
    monkeypatch.setitem(scripted_method.SCRIPT, "q3-en", ["d3"])
    run_benchmark(request(suite, tmp_path, subsets=["alpha"]), echo=lambda _: None)
    result = json.loads((tmp_path / "results/mybench/scripted/alpha.json").read_text())
    assert result["n_queries"] == 3 and "q3-en" not in result["skipped_queries"]
    assert set(result["per_query"]["q3-en"]["metrics"].values()) == {0.0}
    assert result["metrics"]["ndcg_at_10"] == pytest.approx((INV_LOG2_3 + 0 + 0) / 3)
    assert result["protocol"]["score_precision"] == "float32"


def test_run_score_precision_float64_is_recorded_and_changes_ties(suite, tmp_path, monkeypatch):
    """0.30000001 and 0.3 are one float32 value (0.29999999 is not): ties differ between the references."""
    monkeypatch.setattr(scripted_method, "SCORES", {"q1-en": {"d0": 0.30000001, "d1": 0.3, "d2": 0.29999999}})
    args = ["run", "scripted", "-b", str(suite), "-s", "alpha", "-m", "p_at_1,mrr"]
    args += ["--results-dir", str(tmp_path / "r32"), "--cache-dir", str(tmp_path / "cache")]
    assert main(args) == 0
    assert main([*args[:-4], "--results-dir", str(tmp_path / "r64"), "--cache-dir", str(tmp_path / "cache"),
                 "--score-precision", "float64"]) == 0  # fmt: skip
    r32 = json.loads((tmp_path / "r32/mybench/scripted/alpha.json").read_text())
    r64 = json.loads((tmp_path / "r64/mybench/scripted/alpha.json").read_text())
    # q1-en's relevant page is d1: float32 ties it with d0 and puts it first (doc id descending), float64 second.
    assert r32["per_query"]["q1-en"]["metrics"] == {"p_at_1": 1.0, "mrr": 1.0}
    assert r64["per_query"]["q1-en"]["metrics"] == {"p_at_1": 0.0, "mrr": 0.5}
    assert (r32["protocol"]["score_precision"], r64["protocol"]["score_precision"]) == ("float32", "float64")
    # evaluate --result re-scores the saved run under the result's own protocol, unless told otherwise.
    saved = str(tmp_path / "r64/mybench/scripted/alpha.json")
    for extra, expected in (([], "0.0000"), (["--score-precision", "float32"], "1.0000")):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["evaluate", "--result", saved, "-m", "p_at_1", "-q", *extra]) == 0
        rows = dict((line.split("\t")[1], line.split("\t")[2]) for line in out.getvalue().splitlines())
        assert rows["q1-en"] == expected, extra

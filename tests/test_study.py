"""The reranking study end to end on `sample`, against fake rerank providers (real SDK clients)."""

from __future__ import annotations

import csv
import io
import json
import os
import threading
import time

import pytest

from crash_children import kill_at_lines, spawn
from evals_repro.base.errors import UsageError
from evals_repro.base.io import read_jsonl
from evals_repro.study.latency import LATENCY, PLAN, WARMUP, LatencyRequest, run_latency
from evals_repro.study.prepare import PrepareRequest, prepare
from evals_repro.study.quality import QUALITY, QualityRequest, run_quality
from evals_repro.study.report import write_report
from fakes.base import route
from fakes.mixedbread_store import FakeMixedbreadStores
from fakes.rerankers import FakeCohereRerank, FakeVoyageRerank, count_requests
from reference_stats import reference_holm

QUIET = lambda _line: None  # noqa: E731
FAST = {"voyage_interval": 0.0}


class VirtualTime:
    """The `time` module as the code that times a call sees it, its `perf_counter_ns` a clock that moves only when
    the fake answers (by the fake's delay): a timed call lasts exactly what the fake says, whatever the load."""

    def __init__(self) -> None:
        self.ns = 0

    def __getattr__(self, name: str):
        return getattr(time, name)

    def perf_counter_ns(self) -> int:
        return self.ns

    def advance(self, seconds: float) -> None:
        self.ns += round(seconds * 1e9)


class TimedCohere(FakeCohereRerank):
    """Cohere fake with a fixed delay; with `repeat_speedup`, a query's later calls take half as long. With a
    `clock` (VirtualTime) the delay advances that clock instead of sleeping."""

    def __init__(self, delay: float = 0.0, repeat_speedup: bool = False):
        super().__init__()
        self.delay, self.repeat_speedup, self.seen = delay, repeat_speedup, set()
        self.clock: VirtualTime | None = None
        self.arrivals = 0
        self.hold_after: int | None = None  # rerank calls after this many wait until `unhold` is set
        self.unhold = threading.Event()

    @route("POST", r"/v2/rerank")
    def rerank(self, request):
        if request.json is None:  # a body cut off by a killed client
            return self.error_reply(400, "invalid request body")
        with self._lock:
            self.arrivals += 1
            held = self.hold_after is not None and self.arrivals > self.hold_after
        if held:  # a kill test stops the client while this call is unanswered, however slow the machine
            assert self.unhold.wait(120), "the held call was never released"
        query = request.json["query"]
        fast = self.repeat_speedup and query in self.seen
        self.seen.add(query)
        if self.clock is not None:
            self.clock.advance(self.delay / 2 if fast else self.delay)
        else:
            time.sleep(self.delay / 2 if fast else self.delay)
        return super().rerank(request)


@pytest.fixture
def providers(monkeypatch):
    cohere, voyage, mixedbread = TimedCohere(), FakeVoyageRerank(), FakeMixedbreadStores()
    for fake in (cohere, voyage, mixedbread):
        fake.__enter__()
    env = {
        "CO_API_URL": cohere.url,
        "CO_API_KEY": "k",
        "COHERE_API_KEY": "k",
        "VOYAGE_BASE_URL": f"{voyage.url}/v1",
        "VOYAGE_API_KEY": "k",
        "MIXEDBREAD_BASE_URL": mixedbread.url,
        "MXBAI_API_KEY": "k",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield {"cohere": cohere, "voyage": voyage, "mixedbread": mixedbread, "env": env}
    for fake in (cohere, voyage, mixedbread):
        fake.__exit__(None, None, None)


def test_prepare_freezes_native_candidates(study):
    manifest = json.loads((study / "manifest.json").read_text())
    entry = manifest["datasets"]["sample/railway-maintenance"]
    assert entry["first_stage"] == "bm25" and len(entry["query_ids"]) >= 24
    assert all(q.endswith("-fr") for q in entry["query_ids"])  # native language only (french corpus)
    records = read_jsonl(study / "candidates/sample/railway-maintenance.jsonl")
    assert [r["query_id"] for r in records] == entry["query_ids"]
    first = records[0]
    assert len(first["ids"]) == len(first["scores"]) <= 100
    assert first["scores"] == sorted(first["scores"], reverse=True)
    assert manifest["sessions"][-1]["status"] == "completed"
    assert "KEY" not in json.dumps(manifest).upper().replace("KEYWORD", "")


def test_prepare_refuses_changed_dataset(study, tmp_path):
    manifest = json.loads((study / "manifest.json").read_text())
    manifest["datasets"]["sample/heat-pumps"]["data_digest"] = "0" * 64
    (study / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UsageError, match="changed since this study was prepared") as raised:
        prepare(
            PrepareRequest(
                benchmarks=["sample"], subsets=["heat-pumps"], study_dir=study, cache_dir=tmp_path / "cache"
            ),
            echo=QUIET,
        )
    assert "pick a new --study-dir" in raised.value.hint


def test_quality_scores_every_candidate_and_reuses_on_rerun(study, providers, tmp_path):
    cohere = providers["cohere"]
    cohere.fail(429, times=1, retry_after="1", path="/v2/rerank")
    counts = run_quality(
        QualityRequest(
            study_dir=study, models=["cohere-pro", "voyage", "mixedbread"], cache_dir=tmp_path / "cache", options=FAST
        ),
        echo=QUIET,
    )
    records = read_jsonl(study / QUALITY)
    queries = sum(len(read_jsonl(p)) for p in (study / "candidates/sample").glob("*.jsonl"))
    assert counts == {"sent": 3 * queries, "failed": 0, "reused": 0}
    assert {r["status"] for r in records} == {"ok"}
    retried = [r for r in records if r["attempts"] > 1]
    assert len(retried) == 1 and retried[0]["model"] == "cohere-pro" and retried[0]["wait_seconds"] >= 1
    # adding a model reuses every completed request
    before = count_requests(cohere, "POST", "/v2/rerank")
    counts = run_quality(
        QualityRequest(
            study_dir=study, models=["cohere-pro", "cohere-fast"], cache_dir=tmp_path / "cache", options=FAST
        ),
        echo=QUIET,
    )
    assert counts["reused"] == queries and counts["sent"] == queries
    assert count_requests(cohere, "POST", "/v2/rerank") - before == queries


def test_quality_failure_recorded_then_completed(study, providers, tmp_path):
    providers["cohere"].fail(400, times=1, path="/v2/rerank")
    request = QualityRequest(study_dir=study, models=["cohere-pro"], cache_dir=tmp_path / "cache", options=FAST)
    counts = run_quality(request, echo=QUIET)
    assert counts["failed"] == 1
    failed = [r for r in read_jsonl(study / QUALITY) if r["status"] == "failed"]
    assert "400" in failed[0]["error"] and "k" != failed[0]["error"]
    counts = run_quality(request, echo=QUIET)
    assert counts == {"sent": 1, "failed": 0, "reused": counts["reused"]}


def test_torn_last_line_recovered_and_second_writer_refused(study, providers, tmp_path):
    request = QualityRequest(study_dir=study, models=["cohere-fast"], cache_dir=tmp_path / "cache", options=FAST)
    run_quality(request, echo=QUIET)
    lines = (study / QUALITY).read_bytes().splitlines(keepends=True)
    (study / QUALITY).write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    counts = run_quality(request, echo=QUIET)
    assert counts["sent"] == 1  # only the torn request is sent again
    assert len(read_jsonl(study / QUALITY)) == len(lines)
    from evals_repro.base.locks import StudyLock

    with StudyLock(study, "evals-repro rerank-study quality"):  # a live writer (the OS lock is held)
        with pytest.raises(UsageError, match=f"pid {os.getpid()}"):
            run_quality(request, echo=QUIET)


def test_killed_quality_and_latency_resume_without_repeating(study, providers, tmp_path):
    cohere = providers["cohere"]
    cohere.delay, cohere.hold_after = 0.05, 5  # the sixth call waits: the kill lands after exactly five answers
    code = (
        "from pathlib import Path; from evals_repro.study.quality import QualityRequest, run_quality; "
        f"run_quality(QualityRequest(study_dir=Path({str(study)!r}), models=['cohere-pro'], workers=1, "
        f"cache_dir=Path({str(tmp_path / 'cache')!r})), echo=print)"
    )
    kill_at_lines(spawn(code, providers["env"]), study / QUALITY, 5, timeout=60)
    done_before = {r["query_id"] for r in read_jsonl(study / QUALITY) if r["status"] == "ok"}
    assert len(done_before) == 5
    cohere.hold_after = None
    cohere.unhold.set()
    cohere.wait_idle()  # the held call answered (to no one) before the resume's calls are counted
    sent_before = len(cohere.requests)
    run_quality(QualityRequest(study_dir=study, models=["cohere-pro"], cache_dir=tmp_path / "cache"), echo=QUIET)
    # A request the kill cut off mid-body can reach the fake after the kill (its body is not JSON): not resent.
    resent = [r.json["query"] for r in cohere.requests[sent_before:] if r.json is not None]
    queries = {r["query_id"]: r["query"] for p in (study / "candidates/sample").glob("*.jsonl") for r in read_jsonl(p)}
    assert not {queries[q] for q in done_before} & set(resent)
    assert {r["query_id"] for r in read_jsonl(study / QUALITY)} == set(queries)

    code = (
        "from pathlib import Path; from evals_repro.study.latency import LatencyRequest, run_latency; "
        f"run_latency(LatencyRequest(study_dir=Path({str(study)!r}), models=['cohere-pro'], samples=6, "
        f"repeats=3, cache_dir=Path({str(tmp_path / 'cache')!r})), echo=print)"
    )
    kill_at_lines(spawn(code, providers["env"]), study / LATENCY, 4, timeout=60)
    plan = json.loads((study / PLAN).read_text())
    timed_before = {(r["query_id"], r["repeat"]) for r in read_jsonl(study / LATENCY) if r["status"] == "ok"}
    assert timed_before and sum(len(v) for v in plan["queries"]["sample"].values()) == 6
    counts = run_latency(
        LatencyRequest(study_dir=study, models=["cohere-pro"], samples=6, repeats=3, cache_dir=tmp_path / "cache"),
        echo=QUIET,
    )
    assert counts["timed"] == 18 - len(timed_before)
    records = read_jsonl(study / LATENCY)
    assert len({(r["query_id"], r["repeat"]) for r in records}) == 18 == len(records)
    warmups = read_jsonl(study / WARMUP)
    assert {(w["subset"], w["invocation"]) for w in warmups} == {
        (s, i)
        for s in plan["queries"]["sample"]
        if plan["queries"]["sample"][s]
        for i in {w["invocation"] for w in warmups}
    }
    with pytest.raises(UsageError, match="latency plan"):
        run_latency(
            LatencyRequest(study_dir=study, models=["cohere-pro"], samples=7, repeats=3, cache_dir=tmp_path / "cache"),
            echo=QUIET,
        )


@pytest.mark.parametrize("speedup, verdict", [(True, "repeat speed-up"), (False, "no speed-up")])
def test_repeat_diagnostic_on_timed_fake(speedup, verdict, study, providers, tmp_path, monkeypatch):
    """The fake answers in 250 ms (125 ms for a query's later calls with `speedup`) on a virtual clock that the
    timing code reads (providers.retry around the SDK call, study.latency around the whole call): the verdict is
    the fake's, never the machine's load."""
    from evals_repro.providers import retry
    from evals_repro.study import latency as latency_module

    cohere = providers["cohere"]
    cohere.delay, cohere.repeat_speedup, cohere.clock = 0.25, speedup, VirtualTime()
    monkeypatch.setattr(retry, "time", cohere.clock)
    monkeypatch.setattr(latency_module, "time", cohere.clock)
    run_latency(
        LatencyRequest(
            study_dir=study,
            models=["cohere-fast"],
            samples=10,
            repeats=3,
            host_location="test-host",
            cache_dir=tmp_path / "cache",
        ),
        echo=QUIET,
    )
    run_quality(QualityRequest(study_dir=study, models=["cohere-fast"], cache_dir=tmp_path / "cache"), echo=QUIET)
    paths = write_report(study, resamples=400)
    summary = json.loads(paths["latency"].read_text())
    check = summary["models"]["cohere-fast"]["benchmarks"]["sample"]["repeat_check"]
    assert check["verdict"] == verdict, check
    latency = summary["models"]["cohere-fast"]["benchmarks"]["sample"]["summary"]
    assert 125 <= latency["p50"]["estimate"] <= 250  # the fake takes 250 ms (125 ms for fast repeats)
    assert summary["models"]["cohere-fast"]["pooled"] is not None  # complete suite, one host location
    report = paths["report"].read_text()
    assert "## sample" in report and "| cohere-fast |" in report and verdict in report
    rows = list(csv.DictReader(paths["quality"].open()))
    assert {r["subset"] for r in rows} == {"heat-pumps", "railway-maintenance"}
    nd = [r for r in rows if r["metric"] == "ndcg_at_10"]
    assert all(r["baseline"] and r["cohere-fast"] for r in nd)


def test_quality_failures_exit_3_through_the_cli(study, providers, tmp_path, capsys):
    """A failed provider request is a provider error: exit 3 with one line (it used to exit 0)."""
    from evals_repro.cli import main

    providers["cohere"].fail(400, times=1, path="/v2/rerank")
    args = ["rerank-study", "quality", "--study-dir", str(study), "--cache-dir", str(tmp_path / "cache")]
    assert main([*args, "--models", "cohere-pro,cohere-fast"]) == 3
    err = capsys.readouterr().err
    assert "error: 1 quality request(s) failed" in err and "rerun the same command" in err
    assert {r["model"] for r in read_jsonl(study / QUALITY)} == {"cohere-pro", "cohere-fast"}
    assert main([*args, "--models", "cohere-pro", "--models", "cohere-fast"]) == 0
    assert "quality: 1 sent, 0 failed" in capsys.readouterr().err


def test_the_library_logs_and_the_cli_shows_the_same_lines(tmp_path, capsys, caplog, monkeypatch):
    """No print side channel: as a library, prepare only logs; the CLI shows those records on stderr."""
    import logging

    from evals_repro.cli import main

    monkeypatch.setattr(logging.getLogger("evals_repro"), "handlers", [])  # as in a notebook: no CLI handler
    caplog.set_level(logging.INFO, logger="evals_repro")
    request = PrepareRequest(
        benchmarks=["sample"], subsets=["heat-pumps"], study_dir=tmp_path / "study", cache_dir=tmp_path / "cache"
    )
    prepare(request)
    assert capsys.readouterr() == ("", "")
    logged = [r.getMessage() for r in caplog.records if r.name == "evals_repro.study.prepare"]
    assert (
        len(logged) == 1
        and logged[0].startswith("sample/heat-pumps: ")
        and " queries frozen with bm25 -> " in logged[0]
    )
    args = ["rerank-study", "prepare", "-b", "sample", "-s", "heat-pumps"]
    assert main([*args, "--study-dir", str(tmp_path / "study"), "--cache-dir", str(tmp_path / "cache")]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "sample/heat-pumps: candidates already frozen" in err


def test_report_compares_every_reranker_with_the_first_stage_and_each_other(study, providers, tmp_path):
    """comparisons.csv and quality.csv: each model against the first stage and the other model, per dataset, per
    group and overall; the differences are those of the quality table's scores (computed apart, from the means),
    the p-values are randomization p-values (never below 1 / (1 + permutations)), Holm-adjusted."""
    models = ["cohere-fast", "voyage"]
    run_quality(QualityRequest(study_dir=study, models=models, cache_dir=tmp_path / "cache", options=FAST), echo=QUIET)
    paths = write_report(study, resamples=500, permutations=999)
    quality = {(r["subset"], r["metric"]): r for r in csv.DictReader(paths["quality"].open())}
    rows = list(csv.DictReader(paths["comparisons"].open()))
    pairs = {("cohere-fast", "first stage"), ("voyage", "first stage"), ("voyage", "cohere-fast")}
    scopes = {"overall", "sample", "sample/heat-pumps", "sample/railway-maintenance"}
    assert {(r["model"], r["vs"], r["scope"]) for r in rows} == {(*p, s) for p in pairs for s in scopes}
    # Holm over every comparison of the study (p to 6 significant digits in the CSV)
    assert [float(r["p_adjusted"]) for r in rows] == pytest.approx(
        reference_holm([float(r["p"]) for r in rows]), rel=1e-5
    )
    for r in rows:
        assert 1 / 1000 - 1e-9 <= float(r["p"]) <= float(r["p_adjusted"]) <= 1
        assert r["low"] and float(r["low"]) <= float(r["diff"]) <= float(r["high"])
        if r["kind"] == "dataset":
            row = quality[(r["scope"].split("/")[1], "ndcg_at_10")]
            vs = row["baseline"] if r["vs"] == "first stage" else row[r["vs"]]
            assert float(r["diff"]) == pytest.approx(float(row[r["model"]]) - float(vs), abs=0.051)
    for model in models:  # quality.csv: each model's comparison with the first stage on the headline row
        for subset in ("heat-pumps", "railway-maintenance"):
            row = quality[(subset, "ndcg_at_10")]
            found = next(
                r for r in rows if (r["model"], r["vs"], r["scope"]) == (model, "first stage", f"sample/{subset}")
            )
            assert row[f"{model} diff"] == found["diff"] and row[f"{model} p_adjusted"] == found["p_adjusted"]
            assert quality[(subset, "recall_at_10")][f"{model} diff"] == ""
    report = paths["report"].read_text()
    assert "## Paired comparisons (headline measure, x100)" in report
    assert "better / worse than the first stage at p < 0.05" in report
    assert f"Holm-Bonferroni adjusted over all {len(rows)} comparisons of the study" in report


def test_report_seed_fixes_every_draw_and_another_seed_moves_p_within_monte_carlo_error(
    study, providers, tmp_path, capsys
):
    """`rerank-study report --seed`: the same seed, the same comparisons.csv and latency intervals, byte for byte;
    seed 7 draws other resamples and sign patterns, so intervals move and p-values stay within Monte Carlo error
    of the seed-42 ones (4 binomial standard errors each, plus one draw); report.html names the seed in use.
    (That another seed moves a p with room to move is pinned on `report`, through the same PairedStats.)"""
    from evals_repro.cli import main

    models = ["cohere-fast", "voyage"]
    run_quality(QualityRequest(study_dir=study, models=models, cache_dir=tmp_path / "cache", options=FAST), echo=QUIET)
    latency = LatencyRequest(
        study_dir=study, models=["voyage"], samples=6, repeats=2, cache_dir=tmp_path / "cache", options=FAST
    )
    run_latency(latency, echo=QUIET)
    permutations = 2000

    def report(seed: int) -> tuple[str, list[dict], dict, str]:
        paths = write_report(study, resamples=200, permutations=permutations, seed=seed)
        text = paths["comparisons"].read_text()
        summary = json.loads(paths["latency"].read_text())
        return text, list(csv.DictReader(io.StringIO(text))), summary, paths["html"].read_text()

    first, rows42, latency42, _ = report(42)
    again, _, latency42_again, _ = report(42)
    assert first == again and latency42 == latency42_again
    _, rows7, latency7, page = report(7)
    assert "<th>bootstrap and randomization seed</th><td>7</td>" in page.replace("\n", "")
    assert latency7["bootstrap_seed"] == 7 and latency42["bootstrap_seed"] == 42
    mean = [  # a mean's percentile interval moves with the resamples (a p50's can land on the same two calls)
        entry["benchmarks"]["sample"]["summary"]["mean"]
        for entry in (latency42["models"]["voyage"], latency7["models"]["voyage"])
    ]
    assert mean[0]["estimate"] == mean[1]["estimate"] and (mean[0]["low"], mean[0]["high"]) != (
        mean[1]["low"],
        mean[1]["high"],
    )
    moved = 0
    for r42, r7 in zip(rows42, rows7, strict=True):
        assert (r42["model"], r42["vs"], r42["scope"], r42["diff"]) == (r7["model"], r7["vs"], r7["scope"], r7["diff"])
        p = float(r42["p"])
        tolerance = 2 * (4 * (p * (1 - p) / permutations) ** 0.5 + 1 / permutations)
        assert float(r7["p"]) == pytest.approx(p, abs=tolerance), r7
        # the fakes' rerankers differ from the first stage at the smallest p (they tie each other at p = 1), so
        # here the seed shows in the bootstrap draws: every interval around a non-zero difference moves
        moved += float(r42["diff"]) != 0 and (r42["low"], r42["high"]) != (r7["low"], r7["high"])
    assert moved == sum(float(r["diff"]) != 0 for r in rows42) > 0
    assert main(["rerank-study", "report", "--study-dir", str(study), "--seed", "-2"]) == 2
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        "error: --seed -2 must be a whole number of at least 0: use the default 42, or any other whole number >= 0 "
        "(the same seed gives the same p-values)"
    ]


def test_a_models_timings_are_reported_only_of_the_version_its_quality_was_scored_by():
    """The report reads a plugin reranker's latency rows of the version the manifest records for its quality:
    timed under a newer version but scored under the older one, the older timings are shown and the newer ones
    named as not reported (never a quality of one version beside the latency of another). A built-in's rows
    (no `plugin` field, as before plugins were recorded) and a model only timed are read as they are."""
    from evals_repro.study.models import current_rows, reported_versions, unreported

    old, new = "acme-rerank 1.0", "acme-rerank 1.1"

    def row(model: str, plugin: str | None, query: str) -> dict:
        return {"model": model, "model_id": "", "query_id": query} | ({"plugin": plugin} if plugin else {})

    rows = [row("acme", old, "q1"), row("acme", old, "q2"), row("cohere-fast", None, "q1")]
    rows += [row("acme", new, q) for q in ("q1", "q2", "q3")] + [row("timed-only", new, "q1")]
    manifest = {"models": {"acme": {"reranker": "acme", "model": None, "plugin": old}, "cohere-fast": {"model": "x"}}}
    versions = reported_versions(manifest)
    assert versions == {"acme": old, "cohere-fast": ""}
    assert [(r["model"], r.get("plugin"), r["query_id"]) for r in current_rows(rows, versions)] == [
        ("acme", old, "q1"),
        ("acme", old, "q2"),
        ("cohere-fast", None, "q1"),
        ("timed-only", new, "q1"),
    ]
    assert unreported(rows, versions, "timing(s)") == [
        f"acme: 3 timing(s) by {new} not reported: its quality was scored by {old}, and a model's figures are of "
        "one version (score and time the same one to report both)"
    ]
    assert unreported(rows + [row("acme", old, "q3")], versions, "timing(s)") == []  # its quality's version last


def test_the_latency_ecdf_draws_the_calls_of_the_version_the_tables_report(tmp_path):
    """The figures' latency values follow the tables: a plugin reranker's calls of its quality's version only
    (a newer version's timings of the same calls do not replace them), a built-in's rows as they are."""
    from evals_repro.study.figures import latency_values

    old, new = "acme-rerank 1.0", "acme-rerank 1.1"
    (tmp_path / "manifest.json").write_text(json.dumps({"models": {"acme": {"plugin": old}, "voyage": {}}}))

    def row(model: str, plugin: str | None, repeat: int, ms: float) -> dict:
        call = {"model": model, "model_id": "", "benchmark": "sample", "subset": "s", "query_id": "q1"}
        return call | ({"plugin": plugin} if plugin else {}) | {"repeat": repeat, "status": "ok", "latency_ms": ms}

    rows = [row("acme", old, 0, 10.0), row("acme", old, 1, 11.0), row("voyage", None, 0, 5.0)]
    rows += [row("acme", new, 0, 90.0), row("acme", new, 1, 91.0)]
    (tmp_path / LATENCY).write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert latency_values(tmp_path) == {"sample": {"acme": [10.0, 11.0], "voyage": [5.0]}}


def test_report_plots_and_html_page_render_offline_in_chromium(study, providers, tmp_path):
    """Quality bars, quality against p50 latency (with the Pareto front), latency ECDFs and the overall trade-off,
    as PNG and SVG; report.html with every table and figure drawn, offline, no error, no request."""
    from chromium import load, non_blank_share
    from evals_repro.reporting.plots import MANIFEST
    from test_report_html import browser

    binary = browser()
    models = ["cohere-fast", "voyage"]
    run_quality(QualityRequest(study_dir=study, models=models, cache_dir=tmp_path / "cache", options=FAST), echo=QUIET)
    latency = LatencyRequest(
        study_dir=study,
        models=models,
        samples=4,
        repeats=2,
        host_location="test-host",
        cache_dir=tmp_path / "cache",
        options=FAST,
    )
    run_latency(latency, echo=QUIET)
    paths = write_report(study, resamples=300, permutations=500)
    stems = {"sample-quality", "sample-quality-latency", "sample-latency-ecdf", "overall-quality-latency"}
    figures = {f"{s}{x}" for s in stems for x in (".png", ".svg")}
    assert {p.name for p in paths["plots"].iterdir()} == figures | {MANIFEST}  # the manifest lists what it wrote
    assert json.loads((paths["plots"] / MANIFEST).read_text())["files"] == sorted(figures)
    page = paths["html"]
    text = page.read_text(encoding="utf-8")
    assert "<script" not in text and "default-src 'none'" in text and "Paired comparisons" in text
    assert "test-host" in text and "sample/heat-pumps" in text  # provenance: host, datasets
    assert text.count("<h1>") == 1  # report.md's own title is the page's heading, not a second one
    loaded = load(page, ["table", "figure svg"], binary)
    (tmp_path / "study.png").write_bytes(loaded.screenshot)
    assert loaded.requests == [page.resolve().as_uri()] and loaded.blocked == [] and loaded.errors == []
    assert len(loaded.boxes["table"]) == text.count("<table")
    assert len(loaded.boxes["figure svg"]) == len(stems)
    for box in loaded.boxes["table"] + loaded.boxes["figure svg"]:
        assert box.width > 50 and box.height > 20 and non_blank_share(loaded.screenshot, box) > 0.03, box


def test_a_study_interval_excludes_0_exactly_when_the_comparison_is_marked():
    """The constructed case of `report` (test_report_choices), in the study: a model 0.8 below the first stage on
    dataset hp (p = 50/1024 = 0.0488 alone) and level on rw. The study's family: overall, the group and two
    datasets, 4 comparisons; Holm leaves hp at 0.195, unmarked, and tests every comparison at 0.05 / 4. Before,
    hp's 95% bootstrap interval excluded 0; now each interval is the randomization test inverted at 98.75%, and
    hp's holds 0. The bounds are checked against all 2^10 sign patterns of the shifted differences."""
    from evals_repro.study.comparisons import compare_study
    from evals_repro.study.quality_table import BASELINE
    from reference_stats import exact_randomization_p

    differences = {
        "hp": [-0.2, -0.1, -0.15, 0.05, -0.1, -0.05, -0.2, 0.1, -0.1, -0.05],
        "rw": [0.1, -0.1, 0.05, 0.0, -0.05, 0.1, -0.1, 0.05, 0.0, -0.05],
    }
    benchmarks = {}
    for subset, diffs in differences.items():
        per_query = {BASELINE: {f"q{i}": 0.5 for i in range(10)}, "m": {f"q{i}": 0.5 + d for i, d in enumerate(diffs)}}
        scores = {name: {"ndcg_at_10": sum(values.values()) / 10} for name, values in per_query.items()}
        benchmarks[subset] = {"group": "g", "measure": "ndcg_at_10", "scores": scores, "per_query": per_query}
    quality = {"models": ["m"], "groups": ["g"], "benchmarks": {"b": benchmarks}}
    found = compare_study(quality)
    assert [(r.scope, r.kind) for r in found.rows] == [
        ("overall", "overall"),
        ("g", "group"),
        ("b/hp", "dataset"),
        ("b/rw", "dataset"),
    ]
    hp = found.rows[2]
    assert hp.p_adjusted == pytest.approx(reference_holm([r.p for r in found.rows])[2])
    assert hp.p_adjusted > 0.05 and hp.verdict == "" and hp.low < 0 < hp.high
    tolerance = 4 * (0.0125 * 0.9875 / 10_000) ** 0.5 + 2 / 10_000
    for r in found.rows:
        assert r.level == "98.75%"
        diffs = differences.get(r.scope.removeprefix("b/")) or [d for v in differences.values() for d in v]
        for bound, inward in ((r.low, 1e-6), (r.high, -1e-6)):
            assert exact_randomization_p([d - (bound + inward) for d in diffs]) >= 0.0125 - tolerance
            assert exact_randomization_p([d - (bound - inward) for d in diffs]) <= 0.0125 + tolerance

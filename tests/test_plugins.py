"""Plugins through entry points, as a user installs them: real packages (tests/plugins/) with their own
pyproject and entry points, built and installed by uv (offline) into a throwaway venv that sees this
checkout's environment; then `evals-repro methods`, `benchmarks` and `run` in that venv.

Reference values: the demo oracle returns each query's relevant pages best grade first, so nDCG@10
and MAP are 1 by definition; the length reranker's order is the pages' lengths, counted by hand below.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import subprocess

import pytest

from plugin_venv import DEMO, DEMO_ENTRY_POINTS, TWIN, Venv, line_with, records, write_package


def test_methods_lists_plugins_with_their_distribution_and_names_the_broken_and_the_clashing(venv, tmp_path):
    done = venv.cli("methods", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out, err = done.stdout, done.stderr
    assert "plugin method [evals-repro-demo-plugin 1.0.0] Each query's relevant pages" in line_with(out, "demo-oracle")
    assert "plugin embedder [evals-repro-demo-plugin 1.0.0] Hashed bag of words" in line_with(out, "demo-hash ")
    # what it accepts, read from its supports_images (False) as the --content images refusal reads it
    assert line_with(out, "demo-hash ").endswith("(content: markdown)")
    assert "plugin reranker [evals-repro-demo-plugin 1.0.0] Shorter pages first" in line_with(out, "+demo-length")
    # The broken plugin: listed as failing, and named in exactly one warning line with its error.
    broken = line_with(err, "demo-broken")
    assert broken.startswith("warning: plugin method 'demo-broken' (evals-repro-demo-plugin 1.0.0")
    assert "ModuleNotFoundError: No module named 'evals_repro_demo_missing_dependency'" in broken
    assert "failed to import" in line_with(out, "demo-broken")
    # Clashes: with a built-in (the built-in stays), and between two plugins (both refused).
    bm25 = line_with(err, "'bm25'")
    assert f"method 'bm25' (plugin {TWIN} 1.0.0, evals_repro_twin:Twin)" in bm25
    assert "clashes with the built-in method 'bm25' (built-in, evals_repro.retrieval.bm25)" in bm25
    assert line_with(out, "bm25 ").startswith("bm25") and "BM25 (bm25s" in line_with(out, "bm25 ")
    assert "clashes with the built-in reranker 'cohere'" in line_with(err, "'cohere'")
    twin = line_with(err, "demo-twin")
    assert DEMO in twin and TWIN in twin and "both refused" in twin
    assert "demo-twin" not in out
    plus = line_with(err, "demo+plus")
    assert plus.startswith(f"warning: plugin method 'demo+plus' ({DEMO} 1.0.0, evals_repro_demo.retrievers:Oracle")
    assert "a method name cannot hold any of '+'" in plus and "refused" in plus
    assert "Traceback" not in err


def test_benchmarks_lists_plugin_declarations_and_loaders(venv, tmp_path):
    done = venv.cli("benchmarks", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"plugin [{DEMO} 1.0.0]" in line_with(done.stdout, "demo-mini ")
    assert f"plugin [{DEMO} 1.0.0]" in line_with(done.stdout, "demo-coded ")
    assert line_with(done.stdout, "loader demo-layout") == f"loader demo-layout  plugin [{DEMO} 1.0.0]"
    clash = line_with(done.stderr, "'sample'")
    assert f"plugin {TWIN} 1.0.0" in clash and "clashes with the built-in benchmark 'sample'" in clash
    assert "Bundled offline sample" in line_with(done.stdout, "sample  [beir]")  # the built-in kept
    broken = line_with(done.stderr, "demo-broken-bench")
    assert broken.startswith(f"warning: plugin benchmark 'demo-broken-bench' ({DEMO} 1.0.0, evals_repro_demo.broken")
    assert "ModuleNotFoundError" in broken and "skipped" in broken


def test_run_through_a_plugin_records_its_distribution_and_version(venv, tmp_path):
    results = tmp_path / "results"
    done = venv.cli("run", "demo-oracle", "--benchmark", "sample", "--results-dir", str(results), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = records(results, "sample", "demo-oracle")
    assert sorted(written) == ["clinical-trials", "heat-pumps", "railway-maintenance"]
    for record in written.values():
        assert record["metrics"]["ndcg_at_10"] == pytest.approx(1.0)
        assert record["metrics"]["map"] == pytest.approx(1.0)
        recorded = record["config"]["pipeline"]["plugins"]["demo-oracle"]
        sources = recorded.pop("sources")
        assert re.fullmatch("[0-9a-f]{32}", sources)  # installed from a local path: its package's files digested
        assert recorded == {
            "distribution": DEMO,
            "version": "1.0.0",
            "group": "evals_repro.retrievers",
            "target": "evals_repro_demo.retrievers:OracleRetriever",
            "describe": {"oracle": "qrels, best grade first"},
            "install": "local",
        }
        assert record["config"]["retriever"] == {"oracle": "qrels, best grade first"}
    assert "'demo-broken'" not in done.stderr  # a broken method plugin that is not used is not even imported


def test_plugin_benchmarks_declaration_folder_and_loader(venv, tmp_path):
    results = tmp_path / "results"
    for benchmark, subset in (("demo-mini", "tiny"), ("demo-coded", "alpha")):
        done = venv.cli("run", "demo-oracle", "--benchmark", benchmark, "--results-dir", str(results), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        record = records(results, benchmark, "demo-oracle")[subset]
        assert record["metrics"]["ndcg_at_10"] == pytest.approx(1.0)
        assert record["n_queries"] == 2


def test_plugin_embedder_under_a_plugin_reranker(venv, tmp_path):
    """demo-hash (dense, cached, exact index) then demo-length over it: shorter pages first. Pages as
    rerankers read them ("title\\n\\ntext"): d3 "Trials\\n\\na randomised trial" 26 characters, d1
    "Pumps\\n\\nheat pumps move heat" 27, d2 "Rails\\n\\nrail grinding removes corrugation" 40."""
    results, cache = tmp_path / "results", tmp_path / "cache"
    method = "demo-hash+demo-length@5"
    args = ("run", method, "--benchmark", "demo-mini", "--results-dir", str(results), "--cache-dir", str(cache))
    done = venv.cli(*args, "--top-k", "10", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    record = records(results, "demo-mini", method)["tiny"]
    assert set(record["config"]["pipeline"]["plugins"]) == {"demo-hash", "demo-length"}
    assert record["config"]["retriever"]["first_stage"]["embedder"] == {"model": "crc32-bow-64", "dimension": 64}
    with gzip.open(results / "demo-mini" / method / "tiny.run.gz", "rt") as handle:
        lines = [line.split() for line in handle]
    for query in ("q1", "q2"):
        assert [docid for qid, _, docid, *_ in lines if qid == query] == ["d3", "d1", "d2"]
    assert any((cache / "embeddings" / "demo-mini" / "demo-hash").rglob("*.emb"))


def test_a_plugin_that_raises_fails_its_subset_and_the_others_go_on(venv, tmp_path):
    results = tmp_path / "results"
    done = venv.cli("run", "demo-raises", "--benchmark", "sample", "--results-dir", str(results), cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    assert (
        f"railway-maintenance: failed: method 'demo-raises' ({DEMO} 1.0.0, evals_repro_demo.retrievers:RaisingRetriever)"
        ": run() raised RuntimeError: demo retriever cannot read railway-maintenance" in done.stderr
    )
    last = done.stderr.splitlines()[-1]
    assert (
        last.startswith("error: 1 of 3 subsets failed (railway-maintenance): method 'demo-raises'") and len(last) <= 200
    )
    assert sorted(records(results, "sample", "demo-raises")) == ["clinical-trials", "heat-pumps"]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        (
            "demo-incomplete",
            f"error: method 'demo-incomplete' ({DEMO} 1.0.0, evals_repro_demo.retrievers:NoDescribe): object "
            "evals_repro_demo.retrievers.NoDescribe lacks method 'describe' of the Retriever protocol: "
            "add describe() -> dict[str, Any]",
        ),
        (
            "demo-broken",
            f"error: plugin method 'demo-broken' ({DEMO} 1.0.0, evals_repro_demo.broken:Never) failed to import: "
            "ModuleNotFoundError: No module named 'evals_repro_demo_missing_dependency': fix or uninstall " + DEMO,
        ),
        ("demo-twin", f"error: method 'demo-twin' is refused: method 'demo-twin' (plugin {TWIN} 1.0.0"),
        (
            "demo-unstartable",
            f"error: plugin method 'demo-unstartable' ({DEMO} 1.0.0, evals_repro_demo.retrievers:Unstartable) "
            "failed to start: RuntimeError: no GPU here",
        ),
    ],
)
def test_an_unusable_plugin_is_one_line_and_exit_2(venv, tmp_path, method, expected):
    done = venv.cli("run", method, "--benchmark", "sample", "--results-dir", str(tmp_path / "r"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(expected), done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "r" / "sample" / method).exists()


def test_other_commands_still_work_beside_broken_and_clashing_plugins(venv, tmp_path):
    results = tmp_path / "results"
    args = ("run", "bm25", "--benchmark", "sample", "--subsets", "heat-pumps", "--results-dir", str(results))
    done = venv.cli(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    record = records(results, "sample", "bm25")["heat-pumps"]
    assert "plugins" not in record["config"]["pipeline"]  # the built-in BM25 ran, not the twin's `bm25`
    assert record["config"]["retriever"]["method"] == "lucene"  # BM25's own description


def test_help_imports_no_plugin(venv, tmp_path):
    code = (
        "import json, sys\nfrom evals_repro.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    )
    done = subprocess.run([str(venv.python), "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert "run" in done.stdout
    assert not {m for m in loaded if m.startswith(("evals_repro_demo", "evals_repro_twin"))}
    assert not {"evals_repro.methods.plugins", "evals_repro.base.registry"} & loaded


def test_a_plugin_reranker_in_the_reranking_study(venv, tmp_path):
    """Every sample query's frozen candidates are sent to the plugin once; scores are minus the page lengths."""
    folders = ("--study-dir", str(tmp_path / "study"), "--cache-dir", str(tmp_path / "cache"))
    prepared = venv.cli("rerank-study", "prepare", "-b", "sample", "-s", "heat-pumps", *folders, cwd=tmp_path)
    assert prepared.returncode == 0, prepared.stderr
    done = venv.cli("rerank-study", "quality", "--models", "demo-length", "-b", "sample", *folders, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "study" / "quality.jsonl").read_text().splitlines()]
    assert len(rows) == 26 and {row["status"] for row in rows} == {"ok"}
    assert all(score < 0 and score == int(score) for row in rows for score in row["scores"])
    refused = venv.cli("rerank-study", "quality", "--models", "demo-length:x", "-b", "sample", *folders, cwd=tmp_path)
    assert refused.returncode == 2
    assert (
        f"error: study model 'demo-length:x': reranker demo-length (plugin {DEMO} 1.0.0, "
        "evals_repro_demo.rerankers:LengthReranker) takes no :model" in refused.stderr
    )


def test_plugin_cost_is_price_unknown_in_plans_and_ceilings_until_priced(venv, tmp_path):
    """A plugin's spend is outside the price table: `--plan` counts its calls at "price unknown", never
    $0; `--max-cost` refuses to start on it (one line); a `--prices` file pricing it lets the run go.
    Hand counts from demo-mini's files: 3 pages and 2 queries embedded (one call each at batch size 64),
    then one rerank call per query over its 3 pages (depth 5 > 3 pages)."""
    method = "demo-hash+demo-length@5"
    results, cache = tmp_path / "results", tmp_path / "cache"
    common = ("run", method, "--benchmark", "demo-mini", "--results-dir", str(results), "--cache-dir", str(cache))
    plan = venv.cli(*common, "--plan", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    rows = {tuple(line.split()[:3]): line.split()[3:5] for line in plan.stdout.splitlines()[1:4]}
    assert rows == {
        ("plugin", "crc32-bow-64", "pages"): ["1", "3"],
        ("plugin", "crc32-bow-64", "queries"): ["1", "2"],
        ("plugin", "length", "rerank"): ["2", "6"],
    }
    total = line_with(plan.stdout, "total:")
    assert total.startswith("total: 4 requests, cost price unknown: plugin crc32-bow-64 (input_tokens), plugin length")
    assert "$0" not in plan.stdout
    refused = venv.cli(*common, "--max-cost", "100", cwd=tmp_path)
    assert refused.returncode == 2 and not results.exists()
    assert line_with(refused.stderr, "error:").startswith(
        "error: --max-cost $100.00: the plan's cost is unknown (price unknown: plugin crc32-bow-64 (input_tokens)"
    )
    prices = tmp_path / "prices.json"
    entry = {"provider": "plugin", "unit": "input_tokens", "per": 1_000_000, "source": "ours", "read": "2026-12-01"}
    free, paid = {**entry, "model": "crc32-bow-64", "usd": 0}, {**entry, "model": "length", "usd": 2.0}
    prices.write_text(json.dumps({"date": "2026-12-01", "prices": [free, paid]}))
    done = venv.cli(*common, "--max-cost", "100", "--prices", str(prices), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    cost = records(results, "demo-mini", method)["tiny"]["cost"]
    assert cost["price_unknown"] == [] and cost["by_model"]["plugin crc32-bow-64"] == 0
    assert cost["usd"] == pytest.approx(cost["billed"]["plugin length"]["input_tokens"] * 2.0 / 1e6)


def test_run_help_lists_plugin_rerankers_beside_the_built_in_ones(venv, tmp_path):
    """`run --help` names every reranker `--rerank` takes, installed plugins' too (issue 22 item 15), and
    stays help: no plugin module is imported to list them."""
    done = venv.cli("run", "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    listed = text.split("registered reranker, NAME or NAME:model:")[1].split(".")[0]
    names = {name.strip() for name in listed.split(",")}
    assert {"demo-length", "cohere", "minilm", "voyage", "zerank-2"} <= names, names


def test_upgrading_a_plugin_reranker_scores_and_times_it_again_in_the_study(tmp_path):
    """The study reuses a plugin reranker's rows only from the same identity (distribution version, describe(),
    sources): after an upgrade its quality requests and timed calls are made again (one line names both), rows of
    the new version are reused from then on, and the report reads one version's rows only (never a mix of the two);
    a describe() change alone scores it again too."""
    environment = Venv(tmp_path)
    environment.install(write_package(tmp_path, "demo", DEMO, "evals_repro_demo", "1.0.0", DEMO_ENTRY_POINTS))
    study = tmp_path / "study"
    folders = ("--study-dir", str(study), "--cache-dir", str(tmp_path / "cache"))
    quality = ("rerank-study", "quality", "--models", "demo-length", *folders)
    latency = ("rerank-study", "latency", "--models", "demo-length", "--samples", "3", "--repeats", "2", *folders)

    def cli(*args: str) -> str:
        done = environment.cli(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stderr

    def rows(name: str) -> list[dict]:
        return [json.loads(line) for line in (study / name).read_text().splitlines()]

    cli("rerank-study", "prepare", "-b", "sample", "-s", "heat-pumps", *folders)
    cli(*quality)
    cli(*latency)
    tag = re.compile(rf"{DEMO} (1\.[01]\.0) #[0-9a-f]{{12}}")  # what rows record: the label and a short key
    old = rows("quality.jsonl")[0]["plugin"]
    assert tag.fullmatch(old)[1] == "1.0.0"  # type: ignore[index]
    assert [r["plugin"] for r in rows("quality.jsonl")] == [old] * 26
    assert [r["plugin"] for r in rows("latency.jsonl")] == [old] * 6
    assert "quality: 0 request(s) to send, 26 reused from quality.jsonl" in cli(*quality)
    assert "latency: 0 timed call(s) to make, 6 already recorded" in cli(*latency)

    environment.install(write_package(tmp_path, "demo", DEMO, "evals_repro_demo", "1.1.0", DEMO_ENTRY_POINTS))
    err = cli(*quality)
    new = rows("quality.jsonl")[-1]["plugin"]
    assert tag.fullmatch(new)[1] == "1.1.0"  # type: ignore[index]
    assert line_with(err, "not reused").endswith(
        f"quality: demo-length is {new} now: its 26 row(s) scored by {old} are not reused"
    )
    assert "quality: 26 request(s) to send, 0 reused from quality.jsonl" in err
    # Scored by the new version, timed by the old one only: the report shows no latency for it, and says why.
    cli("rerank-study", "report", "--study-dir", str(study), "--resamples", "40", "--permutations", "100")
    summary = json.loads((study / "latency-summary.json").read_text())
    assert "demo-length" not in summary["models"]
    unreported = (
        f"demo-length: 6 timing(s) by {old} not reported: its quality was scored by {new}, and a model's figures "
        "are of one version (score and time the same one to report both)"
    )
    assert summary["not_reported"] == [unreported]
    assert f"Latency: {unreported}." in (study / "report.md").read_text().splitlines()
    err = cli(*latency)
    assert line_with(err, "not reused").endswith(
        f"latency: demo-length is {new} now: its 6 row(s) timed by {old} are not reused"
    )
    assert "latency: 6 timed call(s) to make, 6 already recorded" in err
    assert [r["plugin"] for r in rows("quality.jsonl")] == [old] * 26 + [new] * 26  # the old rows are kept
    assert json.loads((study / "manifest.json").read_text())["models"]["demo-length"]["plugin"] == new
    err = cli(*quality)
    assert "quality: 0 request(s) to send, 26 reused from quality.jsonl" in err and "not reused" not in err

    def headline() -> str:
        cli("rerank-study", "report", "--study-dir", str(study), "--resamples", "40", "--permutations", "100")
        found = [r for r in csv.DictReader((study / "quality.csv").open()) if r["metric"] == "ndcg_at_10"]
        assert len(found) == 1
        return found[0]["demo-length"]

    complete = headline()
    assert complete != ""
    assert json.loads((study / "latency-summary.json").read_text())["not_reported"] == []
    summary = json.loads((study / "latency-summary.json").read_text())["models"]["demo-length"]
    assert summary["plugin"] == new and summary["benchmarks"]["sample"]["coverage"]["recorded"] == 6
    # Half of the new version's answers lost: the report shows no score rather than mix in the old version's.
    lines = (study / "quality.jsonl").read_text().splitlines(keepends=True)
    (study / "quality.jsonl").write_text("".join(lines[: 26 + 13]))
    assert headline() == ""
    assert "quality: 13 request(s) to send, 13 reused from quality.jsonl" in cli(*quality)
    assert headline() == complete
    # The same for timings: 3 of the new version's 6 left, the old version's 6 do not fill the gap.
    lines = (study / "latency.jsonl").read_text().splitlines(keepends=True)
    (study / "latency.jsonl").write_text("".join(lines[: 6 + 3]))
    headline()
    summary = json.loads((study / "latency-summary.json").read_text())["models"]["demo-length"]
    assert summary["plugin"] == new and summary["benchmarks"]["sample"]["coverage"]["recorded"] == 3
    # What it describes changes, its version does not: a new identity, said in one line; nothing reused.
    installed = environment.site_packages() / "evals_repro_demo" / "rerankers.py"
    installed.write_text(installed.read_text().replace('{"model": self.model}', '{"model": self.model, "v": 2}'))
    err = cli(*quality)
    assert line_with(err, "previous identity").startswith("demo-length: describe() changed: v 2 added; sources of")
    assert "quality: 26 request(s) to send, 0 reused from quality.jsonl" in err

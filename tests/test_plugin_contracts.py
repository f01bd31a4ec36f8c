"""What an installed plugin hands back is checked where it hands it back, and a run's exit code says whose the
failure was: `evals-repro run` (and `rerank-study`) in the session's plugin venv (tests/plugin_venv.py), with the demo package's
misbehaving components (tests/plugins/demo/evals_repro_demo/misbehaving.py) broken per subset by
EVALS_REPRO_DEMO_BREAK.

Reference values come from the sample's files: the demo oracle returns each query's judged pages best grade
first, so its nDCG@10 is the ideal DCG of its top k over the ideal DCG@10 (trec_eval's gains: the grades), and a
query it returns nothing for scores 0.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from plugin_venv import DEMO, line_with, records

SAMPLE = Path(__file__).resolve().parents[1] / "benchmarks" / "sample"
RUN_LABEL = f"method 'demo-breaks' ({DEMO} 1.0.0, evals_repro_demo.misbehaving:BreakingRetriever)"
RERANK_LABEL = f"reranker 'demo-misranks' ({DEMO} 1.0.0, evals_repro_demo.misbehaving:BreakingReranker)"
EMBED_LABEL = f"embedder 'demo-zeros' ({DEMO} 1.0.0, evals_repro_demo.misbehaving:ZeroEmbedder)"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One cache for the module's runs (content-addressed, safe to share): BM25's index is built once."""
    return tmp_path_factory.mktemp("cache")


def run(venv, tmp_path: Path, cache: Path, method: str, breaks: str, *args: str):
    folders = ("--results-dir", str(tmp_path / "results"), "--cache-dir", str(cache))
    return venv.cli(
        "run", method, "-b", "sample", *folders, *args, cwd=tmp_path, env={"EVALS_REPRO_DEMO_BREAK": breaks}
    )


def last_line(done) -> str:
    """The run's last line: one error line (at most 200 characters when it sums up several subsets)."""
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ") and "Traceback" not in done.stderr, done.stderr
    assert len(line) <= 200 or " subsets failed" not in line, line
    return line


def written(tmp_path: Path, label: str) -> list[str]:
    folder = tmp_path / "results" / "sample" / label
    return sorted(p.name for p in folder.glob("[!.]*")) if folder.exists() else []  # not the run's lock file


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_a_retriever_breaking_its_contract_everywhere_exits_5_each_reason_said_once(venv, tmp_path, cache):
    done = run(
        venv, tmp_path, cache, "demo-breaks", "heat-pumps=list,railway-maintenance=inf,clinical-trials=unknown-page"
    )
    assert done.returncode == 5, done.stderr
    err = done.stderr
    assert line_with(err, "heat-pumps: failed:") == (
        f"heat-pumps: failed: {RUN_LABEL}: run() returned a list, not the Run mapping {{query_id: {{page_id: score}}}}: "
        "return a dict of dicts, e.g. {'q1': {'p3': 0.82, 'p7': 0.41}}, for the queries it was given "
        '(see "Bring your own model" in the README)'
    )
    infinite = line_with(err, "railway-maintenance: failed:")
    assert (
        f"{RUN_LABEL}: run() scored page " in infinite and "of query 'rw-q01-fr' inf: scores must be finite" in infinite
    )
    assert line_with(err, "clinical-trials: failed:").startswith(
        f"clinical-trials: failed: {RUN_LABEL}: run() returned 1 page id(s) for query 'ct-q01-en' that are not in the "
        "corpus of sample/clinical-trials: 'not-a-page'"
    )
    last = last_line(done)  # the reasons, said in full above, summed up once, the plugin's origin elided
    assert last.startswith(
        "error: all 3 subsets failed in your component: method 'demo-breaks' (…): run() returned a list, not the Run"
    )
    assert "(heat-pumps)" in last and last.endswith(": fix each, then run the command again")
    assert written(tmp_path, "demo-breaks") == []  # nothing of a broken subset is written


def ndcg_at_10_of_the_oracle(subset: str, language: str, top_k: int, empty: int) -> tuple[float, list[str]]:
    """The demo oracle's nDCG@10 on a subset, by hand (trec_eval: gain = grade, discount log2(rank + 1)), its
    first `empty` queries given nothing; and those queries' ids."""
    queries = [q["_id"] for q in jsonl(SAMPLE / subset / "queries.jsonl") if q["language"] == language]
    qrels: dict[str, list[int]] = {}
    for line in (SAMPLE / subset / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, _, grade = line.split("\t")
        qrels.setdefault(qid, []).append(int(grade))
    judged = [q for q in queries if q in qrels]

    def dcg(grades: list[int]) -> float:
        return sum(g / math.log2(rank + 2) for rank, g in enumerate(grades))

    scores = []
    for qid in judged:
        grades = sorted(qrels[qid], reverse=True)
        found = [] if qid in queries[:empty] else [g for g in grades if g > 0][:top_k]
        scores.append(dcg(found[:10]) / dcg(grades[:10]))
    return sum(scores) / len(scores), queries[:empty]


def test_a_partly_broken_run_exits_4_and_numpy_scores_and_empty_queries_are_accepted(venv, tmp_path, cache):
    done = run(
        venv,
        tmp_path,
        cache,
        "demo-breaks",
        "heat-pumps=too-many,railway-maintenance=unasked,clinical-trials=float32-empty",
        "--top-k",
        "5",
    )
    assert done.returncode == 4, done.stderr
    err = done.stderr
    assert line_with(err, "heat-pumps: failed:").startswith(
        f"heat-pumps: failed: {RUN_LABEL}: run() returned 6 pages for query 'hp-q01-en', more than the top_k of 5"
    )
    assert line_with(err, "railway-maintenance: failed:").startswith(
        f"railway-maintenance: failed: {RUN_LABEL}: run() returned 1 query id(s) that were not asked on "
        "sample/railway-maintenance: 'not-asked'"
    )
    assert last_line(done).startswith(
        "error: 2 of 3 subsets failed: method 'demo-breaks' (…): run() returned 6 pages f… (heat-pumps); run() "
        "returned 1 query i… (railway-maintenance): fix each, then rerun with --resume (it runs only those)"
    )
    # clinical-trials: np.float32 scores taken as floats, two queries with nothing, counted and named once
    expected, empty = ndcg_at_10_of_the_oracle("clinical-trials", "english", 5, 2)
    warning = line_with(err, "returned no page")
    assert warning == (
        f"warning: clinical-trials: demo-breaks returned no page for 2 of 26 queries ({', '.join(sorted(empty))}); "
        "each scores 0 where judged (listed in the record's empty_queries)"
    )
    record = records(tmp_path / "results", "sample", "demo-breaks")
    assert sorted(record) == ["clinical-trials"]
    assert record["clinical-trials"]["empty_queries"] == sorted(empty)
    assert record["clinical-trials"]["metrics"]["ndcg_at_10"] == pytest.approx(expected, abs=1e-6)


def test_a_single_subset_run_ends_on_its_own_error_and_code(venv, tmp_path, cache):
    """One subset asked: its error is the last line (not "1 subset(s) failed (...)"), said once, exit 5 (was 4)."""
    done = run(venv, tmp_path, cache, "demo-breaks", "*=list", "-s", "heat-pumps")
    assert done.returncode == 5, done.stderr
    assert last_line(done).startswith(f"error: {RUN_LABEL}: run() returned a list, not the Run mapping")
    assert "heat-pumps: failed" not in done.stderr and done.stderr.count("run() returned a list") == 1
    assert written(tmp_path, "demo-breaks") == []


def test_a_reranker_returning_nan_exits_5_not_2(venv, tmp_path, cache):
    done = run(venv, tmp_path, cache, "bm25+demo-misranks@10", "rerank=nan", "-s", "heat-pumps", "--top-k", "10")
    assert done.returncode == 5, done.stderr
    last = last_line(done)
    assert last.startswith(f"error: {RERANK_LABEL}: rerank() returned 1 score(s) that are not finite numbers for ")
    assert "document 0 scored nan: return a finite float per document" in last
    assert written(tmp_path, "bm25+demo-misranks@10") == []


def test_a_reranker_short_of_scores_on_every_subset_exits_5(venv, tmp_path, cache):
    subsets = ("heat-pumps", "clinical-trials")
    done = run(venv, tmp_path, cache, "bm25+demo-misranks@10", "rerank=short", "--top-k", "10", "-s", ",".join(subsets))
    assert done.returncode == 5, done.stderr
    for subset in subsets:
        assert f"{RERANK_LABEL}: rerank() returned 9 scores for 10 documents for the query" in line_with(
            done.stderr, f"{subset}: failed:"
        )
    # the two reasons differ in their query only (which one failed first is the workers' race): said once
    last = last_line(done)
    assert last.startswith(
        "error: all 2 subsets failed in your component: reranker 'demo-misranks' (…): rerank() returned 9 scores "
        "for 10 documents for the query "
    )
    assert last.endswith(" …: fix it, then run the command again") and last.count("rerank()") == 1


def test_an_embedder_returning_zero_rows_is_named_and_nothing_is_cached(venv, tmp_path, cache):
    pages = jsonl(SAMPLE / "heat-pumps" / "corpus.jsonl")
    texts = [f"title: {p['title']}\n{p['text']}" for p in pages]  # as the demo embedder reads pages (LABELLED)
    zero = [i for i, text in enumerate(texts) if "defrost" in text.lower()]
    assert 0 < len(zero) < len(pages)
    done = run(venv, tmp_path, cache, "demo-zeros", "zero=defrost", "-s", "heat-pumps")
    assert done.returncode == 5, done.stderr
    last = last_line(done)
    assert last.startswith(
        f"error: {EMBED_LABEL}: embed() failed the zero-norm check: {len(zero)} of {len(pages)} document rows "
        f"(items {', '.join(map(str, zero))}; item {zero[0]}: 'title: {pages[zero[0]]['title'][:20]}"
    )
    assert "are all zeros and cannot be normalised" in last
    assert not list(cache.rglob("*.emb")) and written(tmp_path, "demo-zeros") == []  # (no other run embeds)


def test_a_plugin_reranker_breaking_its_contract_stops_the_study_with_exit_5(venv, tmp_path, cache):
    """In `rerank-study quality` and `latency` the installed plugin's NaN stops the phase at once on the line
    `run` ends on (above), exit 5: it used to be a failed request among others, the phase going on, exit 3."""
    folders = ("--study-dir", str(tmp_path / "study"), "--cache-dir", str(cache))
    prepared = venv.cli("rerank-study", "prepare", "-b", "sample", "-s", "heat-pumps", *folders, cwd=tmp_path)
    assert prepared.returncode == 0, prepared.stderr
    broken = {"EVALS_REPRO_DEMO_BREAK": "rerank=nan"}
    phases = {
        "quality": (("--quality-workers", "1"), "quality.jsonl"),
        "latency": (("--samples", "3", "--repeats", "2"), "warmup.jsonl"),  # the first call is a warm-up
    }
    for phase, (options, journal) in phases.items():
        args = ("rerank-study", phase, "--models", "demo-misranks", *options, *folders)
        done = venv.cli(*args, cwd=tmp_path, env=broken)
        assert done.returncode == 5, done.stderr
        last = last_line(done)
        assert last.startswith(f"error: {RERANK_LABEL}: rerank() returned 1 score(s) that are not finite numbers for ")
        assert last.endswith(
            "document 0 scored nan: return a finite float per document (NaN and ±inf cannot be ranked)"
        )
        assert "request(s) failed" not in done.stderr and done.stderr.count("scored nan") == 1
        rows = jsonl(tmp_path / "study" / journal)
        assert [r["status"] for r in rows] == ["failed"]  # the first answer broke: nothing more was sent
        assert rows[0]["error"] == last.removeprefix("error: ")

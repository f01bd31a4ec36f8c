"""The contracts a component of the user's own keeps (base/contracts.py), through Python objects given to
`evals_repro.run` on the sample's heat-pumps subset: each violation fails the subset in one line naming the
component, the query or row and what was wrong (a ComponentError, exit 5), and nothing of it is written.

Reference values come from the sample's files: the oracle returns each query's judged pages best grade first,
so its nDCG@10 is 1; a query given nothing scores 0 (trec_eval -c), so the mean is (judged - empty) / judged.
"""

from __future__ import annotations

import gzip
import json
import logging
import types
from pathlib import Path

import numpy as np
import pytest

import evals_repro
from evals_repro.base.errors import ComponentError
from evals_repro.base.usage import Usage
from evals_repro.embedders.guarded import GuardedEmbedder

SAMPLE = Path(__file__).resolve().parents[1] / "benchmarks" / "sample" / "heat-pumps"
FIRST = "hp-q01-en"  # the subset's first English query (queries.jsonl)


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def judged_pages(qid: str) -> list[str]:
    """A query's relevant pages, best grade first (the oracle's ranking), read from the qrels file."""
    rows = [line.split("\t") for line in (SAMPLE / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    graded = sorted(((d, int(g)) for q, d, g in rows if q == qid and int(g) > 0), key=lambda x: (-x[1], x[0]))
    return [d for d, _ in graded]


class Oracle:
    """Relevant pages best grade first; its answer passed through `breaks(run, subset, queries, top_k)`."""

    name = "oracle"

    def __init__(self, breaks=None):
        self.breaks = breaks

    def run(self, subset, queries, top_k):
        run = {}
        for query in queries:
            judged = subset.qrels.get(query.id, {})
            ranked = sorted((d for d, g in judged.items() if g > 0), key=lambda d: (-judged[d], d))[:top_k]
            run[query.id] = {d: float(judged[d]) for d in ranked}
        return self.breaks(run, subset, queries, top_k) if self.breaks else run

    def describe(self):
        return {"oracle": True}


def first_query(change):
    """A break that changes the first query's pages only."""
    return lambda run, subset, queries, top_k: {**run, FIRST: change(run[FIRST], subset, top_k)}


def run_one(tmp_path: Path, method: str | None = None, top_k: int = 5, **objects):
    return evals_repro.run(
        method, subsets=["heat-pumps"], results_dir=tmp_path / "r", cache_dir=tmp_path / "c", top_k=top_k, **objects
    )


def only_failure(summary) -> ComponentError:
    assert [o.status for o in summary.outcomes] == ["failed"]
    error = summary.failures[0].error
    assert isinstance(error, ComponentError) and error.exit_code == 5 and "\n" not in error.one_line()
    assert summary.error() is error  # one subset asked: its own error is the run's
    return error


def nothing_written(tmp_path: Path) -> bool:
    return not [p for p in (tmp_path / "r").rglob("*") if p.is_file() and not p.name.startswith(".")]


LABEL = "method 'breaks' (Python object test_contracts:Oracle)"
PAGE = judged_pages(FIRST)[0]


@pytest.mark.parametrize(
    ("breaks", "expected"),
    [
        (lambda run, *_: list(run.items()), "run() returned a list, not the Run mapping {query_id: {page_id: score}}"),
        (lambda run, *_: None, "run() returned None, not the Run mapping {query_id: {page_id: score}}"),
        (lambda run, *_: "hp-q01-en hp-p02 1.0", "run() returned a str, not the Run mapping"),
        (
            first_query(lambda pages, *_: {p: float("inf") for p in pages}),
            f"scored page '{PAGE}' of query '{FIRST}' inf",
        ),
        (first_query(lambda pages, *_: {p: -float("inf") for p in pages}), f"of query '{FIRST}' -inf: scores must be"),
        (first_query(lambda pages, *_: {p: float("nan") for p in pages}), f"of query '{FIRST}' nan: scores must be"),
        (
            first_query(lambda pages, *_: {**pages, "nope": 1.0}),
            f"returned 1 page id(s) for query '{FIRST}' that are not in the corpus of sample/heat-pumps: 'nope'",
        ),
        (first_query(lambda pages, *_: {**pages, 7: 1.0}), "not in the corpus of sample/heat-pumps: 7"),
        (
            first_query(lambda pages, subset, top_k: {p.id: 1.0 for p in subset.pages[: top_k + 1]}),
            f"returned 6 pages for query '{FIRST}', more than the top_k of 5 it was given",
        ),
        (
            lambda run, *_: {**run, "hp-q01-fr": {PAGE: 1.0}},  # a query of the subset, but not asked (monolingual)
            "returned 1 query id(s) that were not asked on sample/heat-pumps: 'hp-q01-fr'",
        ),
        (first_query(lambda pages, *_: list(pages)), f"returned a list for query '{FIRST}', not a mapping"),
        (
            first_query(lambda pages, *_: {p: "0.5" for p in pages}),
            f"scored page '{PAGE}' of query '{FIRST}' with a str ('0.5'), not a number",
        ),
        (first_query(lambda pages, *_: {p: True for p in pages}), "with a bool (True), not a number"),
    ],
)
def test_a_retriever_breaking_its_contract_fails_its_subset_in_one_line(tmp_path, breaks, expected):
    error = only_failure(run_one(tmp_path, retriever=Oracle(breaks), name="breaks"))
    assert error.message.startswith(f"{LABEL}: ") and expected in error.message, error.message
    assert nothing_written(tmp_path)


@pytest.mark.parametrize(
    "convert",
    [np.float32, np.float64, np.int64, int, lambda grade: np.asarray(grade, dtype=np.float16)[()]],
)
def test_numpy_and_integer_scores_are_taken_as_the_floats_they_are(tmp_path, convert):
    """np.float32 scores failed inside pytrec_eval ("Unable to extract query/object scores")."""

    def numpy_scores(run, *_):
        return types.MappingProxyType({q: {d: convert(s) for d, s in pages.items()} for q, pages in run.items()})

    summary = run_one(tmp_path, top_k=100, retriever=Oracle(numpy_scores), name="numpy")
    assert [o.status for o in summary.outcomes] == ["written"]
    assert summary.outcomes[0].metrics["ndcg_at_10"] == pytest.approx(1.0)
    with gzip.open(tmp_path / "r" / "sample" / "numpy" / "heat-pumps.run.gz", "rt") as handle:
        first = [line.split() for line in handle if line.startswith(FIRST + " ")]
    assert [row[2] for row in first] == judged_pages(FIRST)


def test_queries_with_nothing_are_allowed_counted_and_named_once(tmp_path, caplog):
    queries = [q["_id"] for q in jsonl(SAMPLE / "queries.jsonl") if q["language"] == "english"]
    judged = {line.split("\t")[0] for line in (SAMPLE / "qrels" / "test.tsv").read_text().splitlines()[1:]}
    emptied = queries[:4]

    def nothing_for_some(run, *_):
        return {q: pages for q, pages in run.items() if q not in emptied[:2]} | {q: {} for q in emptied[2:]}

    with caplog.at_level(logging.WARNING, logger="evals_repro"):
        summary = run_one(tmp_path, top_k=100, retriever=Oracle(nothing_for_some), name="sparse")
    assert [o.status for o in summary.outcomes] == ["written"]
    scored = [q for q in queries if q in judged]
    expected = (len(scored) - len([q for q in emptied if q in judged])) / len(scored)
    assert summary.outcomes[0].metrics["ndcg_at_10"] == pytest.approx(expected)
    record = json.loads((tmp_path / "r" / "sample" / "sparse" / "heat-pumps.json").read_text())
    assert record["empty_queries"] == sorted(emptied)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"heat-pumps: sparse returned no page for 4 of {len(queries)} queries ({', '.join(sorted(emptied)[:3])} "
        "and 1 more); each scores 0 where judged (listed in the record's empty_queries)"
    ]


def test_a_retriever_that_raises_is_named_as_the_users_code(tmp_path):
    def raising(run, *_):
        raise KeyError("index not built")

    error = only_failure(run_one(tmp_path, retriever=Oracle(raising), name="breaks"))
    assert error.one_line() == (
        f"{LABEL}: run() raised KeyError: 'index not built': fix the component (--verbose shows its traceback)"
    )
    assert isinstance(error.__cause__, KeyError)  # the traceback --verbose shows


class Reranker:
    """Shorter pages first; its scores passed through `breaks(scores)`."""

    name = "length"
    model = "chars"

    def __init__(self, breaks=None):
        self.breaks = breaks

    def rerank(self, query, documents):
        scores = [-float(len(d)) for d in documents]
        return self.breaks(scores) if self.breaks else scores

    def describe(self):
        return {"model": self.model}


RERANK_LABEL = "reranker 'length' (Python object test_contracts:Reranker)"


@pytest.mark.parametrize(
    ("breaks", "expected"),
    [
        (lambda scores: scores[:-1], "rerank() returned 4 scores for 5 documents for the query '"),
        (lambda scores: [float("nan")] + scores[1:], "returned 1 score(s) that are not finite numbers for the query"),
        (lambda scores: scores[:-1] + [float("inf")], "document 4 scored inf"),
        (lambda scores: scores[:2] + ["x"] + scores[3:], "document 2 scored 'x' (a str)"),
        (lambda scores: None, "rerank() returned None for the query '"),
        (lambda scores: dict(enumerate(scores)), "rerank() returned a dict for the query '"),
        (lambda scores: np.float32(1.0), "rerank() returned a float32 for the query '"),
    ],
)
def test_a_reranker_breaking_its_contract_fails_its_subset_in_one_line(tmp_path, breaks, expected):
    error = only_failure(run_one(tmp_path, "bm25", top_k=10, reranker=Reranker(breaks), name="length", rerank_depth=5))
    assert error.message.startswith(f"{RERANK_LABEL}: ") and expected in error.message, error.message
    assert nothing_written(tmp_path)


def test_a_reranker_answering_a_numpy_array_is_taken_as_its_floats(tmp_path):
    """The reranked head is the first stage's top 5 ordered by page length (what rerankers read: title, blank
    line, text), counted here from the corpus file."""
    results = tmp_path / "r"
    evals_repro.run("bm25", subsets=["heat-pumps"], results_dir=results, cache_dir=tmp_path / "c", top_k=10)
    as_array = Reranker(lambda scores: np.asarray(scores, dtype=np.float32))
    summary = run_one(tmp_path, "bm25", top_k=10, reranker=as_array, name="length", rerank_depth=5)
    assert [o.status for o in summary.outcomes] == ["written"]
    pages = {p["_id"]: len(f"{p['title']}\n\n{p['text']}") for p in jsonl(SAMPLE / "corpus.jsonl")}

    def ranked(label: str) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        with gzip.open(results / "sample" / label / "heat-pumps.run.gz", "rt") as handle:
            for line in handle:
                out.setdefault(line.split()[0], []).append(line.split()[2])
        return out

    first, reranked = ranked("bm25"), ranked("bm25+length@5")
    for qid, order in first.items():
        assert reranked[qid][:5] == sorted(order[:5], key=lambda d: (pages[d], d))


class Embedder:
    """Hashed bag of words; rows of the items whose text holds `zero` are all zeros, `nan` rows hold a NaN."""

    name = "bag"
    model = "bag-v1"
    dimension = 16
    supports_images = False
    text_style = evals_repro.PageStyle.LABELLED

    def __init__(self, zero: str = "", nan: str = ""):
        self.zero, self.nan = zero, nan

    def embed(self, items, input_type):
        rows = np.zeros((len(items), 16), dtype=np.float32)
        for i, item in enumerate(items):
            for word in item.text.lower().split():
                rows[i, sum(map(ord, word)) % 16] += 1.0
            if self.zero and self.zero in item.text.lower():
                rows[i] = 0.0
            if self.nan and self.nan in item.text.lower():
                rows[i, 3] = np.nan
        return rows

    def describe(self):
        return {"zero": self.zero, "nan": self.nan}


EMBED_LABEL = "embedder 'bag' (Python object test_contracts:Embedder)"


@pytest.mark.parametrize(("kind", "check"), [("zero", "zero-norm"), ("nan", "non-finite")])
def test_an_embedder_row_that_cannot_be_normalised_is_named_and_nothing_is_cached(tmp_path, kind, check):
    pages = jsonl(SAMPLE / "corpus.jsonl")
    texts = [f"title: {p['title']}\n{p['text']}" for p in pages]  # LABELLED, as the embedder reads pages
    hit = [i for i, text in enumerate(texts) if "defrost" in text.lower()]
    error = only_failure(run_one(tmp_path, embedder=Embedder(**{kind: "defrost"}), name="bag"))
    what = "are all zeros and cannot be normalised" if kind == "zero" else "hold NaN, ±inf or values past float32"
    assert error.message.startswith(
        f"{EMBED_LABEL}: embed() failed the {check} check: {len(hit)} of {len(pages)} document rows "
        f"(items {', '.join(map(str, hit))}; item {hit[0]}: 'title: {pages[hit[0]]['title'][:20]}"
    )
    assert error.message.endswith(what)
    assert nothing_written(tmp_path) and not list((tmp_path / "c").rglob("*.emb"))


class Scripted:
    """An embedder answering what the test scripts, for the checks' unit tests."""

    name = "scripted"
    model = "m"
    dimension = None
    supports_images = False
    text_style = evals_repro.PageStyle.LABELLED

    def __init__(self, answer):
        self.answer = answer

    def embed(self, items, input_type):
        return self.answer

    def describe(self):
        return {}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ([[1.0, 2.0], [3.0]], "failed the shape check: it returned a list that is not a matrix of numbers"),
        ([["a", "b"], ["c", "d"]], "failed the shape check: it returned a list that is not a matrix of numbers"),
        (None, "failed the shape check: it returned shape () for 2 query items"),
        (np.ones(2), "failed the shape check: it returned shape (2,) for 2 query items"),
        (np.ones((2, 2, 2)), "failed the shape check: it returned shape (2, 2, 2) for 2 query items"),
        ([[1e39, 1.0], [1.0, 1.0]], "failed the non-finite check: 1 of 2 query rows (items 0; item 0: 'first')"),
        (np.zeros((2, 3)), "failed the zero-norm check: 2 of 2 query rows (items 0, 1; item 0: 'first')"),
    ],
)
def test_each_embedder_check_says_which_it_is(answer, expected):
    items = [evals_repro.EmbedItem(text="first"), evals_repro.EmbedItem(text="second")]
    with pytest.raises(ComponentError) as caught:
        GuardedEmbedder(Scripted(answer), "scripted", Usage()).embed(items, "query")
    assert caught.value.message.startswith(f"embedder 'scripted': embed() {expected}"), caught.value.message


def test_the_checks_can_be_bypassed_for_the_side_by_side_benchmark_only_inside_the_block():
    from evals_repro.base import contracts

    broken = {"q": {"p": float("inf")}}
    subset = evals_repro.Subset("b", "s", "english", [evals_repro.Page("p", "text")], [], {})
    asked = [evals_repro.Query("q", "text", "english")]
    with contracts.unchecked():
        assert contracts.checked_run(broken, "method 'x'", subset, asked, 5) is broken
    with pytest.raises(ComponentError, match="scores must be finite"):
        contracts.checked_run(broken, "method 'x'", subset, asked, 5)


def test_a_corpus_on_disk_checks_a_runs_page_ids_in_one_lookup(tmp_path):
    """A PageStore corpus (MS MARCO-scale text sets) answers the run check in bulk: `missing` finds exactly the
    ids that name no page (an empty id, one longer than any stored, a near miss) and the check names them."""
    from evals_repro.base import contracts
    from evals_repro.base.pagestore import build_store

    pages = [("d2", "wing"), ("d10", "plate"), ("a", "slab")]
    store = build_store(tmp_path / "store", iter(pages), source={"kind": "test"})
    assert store.missing(["d10", "d1", "", "a", "d100000", "a\0", "d2"]) == ["d1", "", "d100000", "a\0"]
    assert store.missing([]) == []
    queries = [evals_repro.Query("q1", "x", "english"), evals_repro.Query("q2", "y", "english")]
    subset = evals_repro.Subset("b", "s", "english", store, queries, {})
    good = {"q1": {"d2": 1.0, "a": 0.5}, "q2": {"d10": np.float32(2.0)}}
    assert contracts.checked_run(good, "method 'x'", subset, queries, 5) == {
        "q1": {"d2": 1.0, "a": 0.5},
        "q2": {"d10": 2.0},
    }
    with pytest.raises(ComponentError) as caught:
        contracts.checked_run({"q1": {"d2": 1.0}, "q2": {"d1": 1.0, "d10": 0.5}}, "method 'x'", subset, queries, 5)
    assert caught.value.message == (
        "method 'x': run() returned 1 page id(s) for query 'q2' that are not in the corpus of b/s: 'd1'"
    )

"""Python objects given to `evals_repro.run(retriever=, embedder=, reranker=, name=)`.

Reference values are computed here from the sample's own files (benchmarks/sample/heat-pumps), not
by the code under test: the dense ranking by numpy cosine over the objects' vectors, the reranked
order by page length, an oracle's nDCG@10 of 1 by construction.
"""

from __future__ import annotations

import ast
import gzip
import json
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

import evals_repro
from evals_repro.base.errors import ComponentError, UsageError
from evals_repro.base.registry import EMBEDDERS, METHODS, RERANKERS
from evals_repro.base.usage import Usage
from evals_repro.embedders.guarded import GuardedEmbedder

SAMPLE = Path(__file__).resolve().parents[1] / "benchmarks" / "sample" / "heat-pumps"
WIDTH = 256


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def bag(text: str | None) -> np.ndarray:
    """Hashed bag of words, NOT normalised (the harness normalises an outside embedder's rows)."""
    vector = np.zeros(WIDTH, dtype=np.float32)
    for word in (text or "").lower().split():
        vector[zlib.crc32(word.encode()) % WIDTH] += 1.0
    return vector


class BagEmbedder:
    """Hashed bag of words; records every call's size."""

    name = "bag"
    model = "crc32-bow-256"
    dimension = WIDTH
    supports_images = False
    text_style = evals_repro.PageStyle.LABELLED
    batch_size = 7

    def __init__(self, salt: str = "") -> None:
        self.calls: list[int] = []
        self.salt = salt

    def embed(self, items, input_type):
        self.calls.append(len(items))
        return np.stack([bag(item.text) for item in items])

    def describe(self):
        return {"model": self.model, "salt": self.salt}


class Oracle:
    """Relevant pages best grade first."""

    name = "oracle"

    def run(self, subset, queries, top_k):
        return {q.id: {d: float(g) for d, g in subset.qrels.get(q.id, {}).items() if g > 0} for q in queries}

    def describe(self):
        return {"oracle": True}


class LengthReranker:
    """Shorter pages first; raises on a chosen query."""

    name = "length"
    model = "chars"

    def __init__(self, fail_on: str | None = None) -> None:
        self.fail_on = fail_on

    def rerank(self, query, documents):
        if self.fail_on and self.fail_on in query:
            raise RuntimeError(f"length reranker refuses {self.fail_on!r}")
        return [-float(len(d)) for d in documents]

    def describe(self):
        return {"model": self.model}


def saved_run(results: Path, label: str, subset: str = "heat-pumps") -> dict[str, list[tuple[str, float]]]:
    ranked: dict[str, list[tuple[str, float]]] = {}
    with gzip.open(results / "sample" / label / f"{subset}.run.gz", "rt") as handle:
        for line in handle:
            qid, _, doc, _, score, _ = line.split()
            ranked.setdefault(qid, []).append((doc, float(score)))
    return ranked


def record(results: Path, label: str, subset: str = "heat-pumps") -> dict:
    return json.loads((results / "sample" / label / f"{subset}.json").read_text())


def test_exported_protocols_are_the_ones_the_builtins_implement():
    from evals_repro.embedders.base import Embedder
    from evals_repro.rerankers.base import Reranker
    from evals_repro.retrieval.base import Retriever

    assert (evals_repro.Retriever, evals_repro.Embedder, evals_repro.Reranker) == (Retriever, Embedder, Reranker)
    assert evals_repro.Retriever.run.__doc__ is None or "top_k" in (evals_repro.Retriever.__doc__ or "")
    assert {"Retriever", "Embedder", "Reranker", "Subset", "Query", "PageStyle", "run"} <= set(evals_repro.__all__)


def test_an_embedder_object_gets_the_cache_and_the_exact_index(tmp_path):
    embedder = BagEmbedder()
    results, cache = tmp_path / "results", tmp_path / "cache"
    summary = evals_repro.run(
        embedder=embedder, name="bag", subsets=["heat-pumps"], results_dir=results, cache_dir=cache, top_k=10
    )
    assert [o.status for o in summary.outcomes] == ["written"]
    pages = jsonl(SAMPLE / "corpus.jsonl")
    queries = [q for q in jsonl(SAMPLE / "queries.jsonl") if q["language"] == "english"]
    # The reference: numpy cosine over the same vectors (pages as text embedders read them: "title: ...").
    page_matrix = np.stack([bag(f"title: {p['title']}\n{p['text']}" if p.get("title") else p["text"]) for p in pages])
    page_matrix /= np.linalg.norm(page_matrix, axis=1, keepdims=True)
    ranked = saved_run(results, "bag")
    for query in queries:
        vector = bag(query["text"])
        scores = page_matrix.astype(np.float64) @ (vector / np.linalg.norm(vector)).astype(np.float64)
        order = sorted(range(len(pages)), key=lambda i: (-scores[i], pages[i]["_id"]))[:5]
        got = ranked[query["_id"]][:5]
        assert [d for d, _ in got] == [pages[i]["_id"] for i in order]
        assert [s for _, s in got] == pytest.approx([scores[i] for i in order], abs=1e-5)
    assert max(embedder.calls) <= 7 and sum(embedder.calls) == len(pages) + len(queries)
    spent = record(results, "bag")["usage"]
    assert spent["bag_items"] == len(pages) + len(queries) and spent["bag_requests"] == len(embedder.calls)
    # A second run (another results folder) pays for nothing: every vector comes from the cache.
    again = BagEmbedder()
    evals_repro.run(embedder=again, name="bag", subsets=["heat-pumps"], results_dir=tmp_path / "r2", cache_dir=cache)
    assert again.calls == []
    assert EMBEDDERS.get("bag") is None  # held for the run only


def test_a_reranker_object_reranks_any_first_stage(tmp_path):
    results = tmp_path / "results"
    evals_repro.run("bm25", subsets=["heat-pumps"], results_dir=results, top_k=20)
    evals_repro.run(
        "bm25", reranker=LengthReranker(), name="length", rerank_depth=5, subsets=["heat-pumps"], results_dir=results
    )
    first, reranked = saved_run(results, "bm25"), saved_run(results, "bm25+length@5")
    pages = {p["_id"]: p for p in jsonl(SAMPLE / "corpus.jsonl")}
    length = {i: len(f"{p['title']}\n\n{p['text']}") for i, p in pages.items()}  # what rerankers read
    for qid, ranking in first.items():
        head = [d for d, _ in ranking[:5]]
        assert [d for d, _ in reranked[qid][:5]] == sorted(head, key=lambda d: (length[d], d))
        assert [d for d, _ in reranked[qid][5:10]] == [d for d, _ in ranking[5:10]]
    plugins = record(results, "bm25+length@5")["config"]["pipeline"]["plugins"]
    assert plugins["length"]["group"] == "python object"
    assert plugins["length"]["target"] == "test_python_objects:LengthReranker"
    assert RERANKERS.get("length") is None


def test_an_object_that_raises_fails_its_subset_and_the_others_go_on(tmp_path):
    summary = evals_repro.run(
        "bm25",
        reranker=LengthReranker(fail_on="voies"),
        name="picky",
        rerank_depth=5,
        results_dir=tmp_path / "results",
    )
    status = {o.subset: o.status for o in summary.outcomes}
    assert status == {"heat-pumps": "written", "railway-maintenance": "failed", "clinical-trials": "written"}
    assert [f.reason for f in summary.failures] == [
        "reranker 'picky' (Python object test_python_objects:LengthReranker): rerank() raised RuntimeError: "
        "length reranker refuses 'voies': fix the component (--verbose shows its traceback)"
    ]
    assert summary.failures[0].error.exit_code == 5  # the user's code failed: neither a provider nor a bug of ours
    assert summary.error().exit_code == 4  # the others are written


def test_an_oracle_retriever_object_and_resume(tmp_path, caplog):
    results = tmp_path / "results"
    summary = evals_repro.run(retriever=Oracle(), name="oracle", results_dir=results)
    assert all(o.metrics["ndcg_at_10"] == pytest.approx(1.0) for o in summary.outcomes)
    kept = evals_repro.run(retriever=Oracle(), name="oracle", results_dir=results, resume=True)
    assert {o.status for o in kept.outcomes} == {"skipped"}

    class Changed(Oracle):
        def describe(self):
            return {"oracle": "v2"}

    with caplog.at_level("INFO", logger="evals_repro"):
        rerun = evals_repro.run(retriever=Changed(), name="oracle", results_dir=results, resume=True)
    assert {o.status for o in rerun.outcomes} == {"written"}
    changed = (
        "oracle: test_python_objects:Oracle -> test_python_objects:test_an_oracle_retriever_object_and_resume."
        '<locals>.Changed; describe() changed: oracle true -> "v2"'
    )
    assert f"heat-pumps: recomputing, the existing result does not match ({changed})" in caplog.text


class NoDescribe:
    name = "x"

    def run(self, subset, queries, top_k):
        return {}


class NoModel:
    name = "x"
    dimension = None
    supports_images = False
    text_style = evals_repro.PageStyle.LABELLED

    def embed(self, items, input_type):
        return np.zeros((len(items), 2))

    def describe(self):
        return {}


class RerankNotCallable:
    name = "x"
    model = "m"
    rerank = "not a method"

    def describe(self):
        return {}


@pytest.mark.parametrize(
    ("keyword", "obj", "expected"),
    [
        (
            "retriever",
            NoDescribe(),
            "method 'mine' (Python object test_python_objects:NoDescribe): object test_python_objects.NoDescribe "
            "lacks method 'describe' of the Retriever protocol: add describe() -> dict[str, Any]",
        ),
        (
            "embedder",
            NoModel(),
            "embedder 'mine' (Python object test_python_objects:NoModel): object test_python_objects.NoModel "
            "lacks attribute 'model' of the Embedder protocol: add model: str",
        ),
        (
            "reranker",
            RerankNotCallable(),
            "reranker 'mine' (Python object test_python_objects:RerankNotCallable): object "
            "test_python_objects.RerankNotCallable lacks method 'rerank' of the Reranker protocol: "
            "add rerank(query: str, documents: list[str]) -> list[float]",
        ),
    ],
)
def test_an_object_missing_a_protocol_member_is_one_line_before_any_work(tmp_path, keyword, obj, expected):
    method = "bm25" if keyword == "reranker" else None
    with pytest.raises(UsageError) as caught:
        evals_repro.run(method, name="mine", results_dir=tmp_path / "r", **{keyword: obj})
    assert caught.value.one_line().startswith(expected)
    assert caught.value.exit_code == 2 and "\n" not in caught.value.one_line()
    assert not (tmp_path / "r").exists()


def test_a_name_taken_by_a_builtin_is_refused_naming_both(tmp_path):
    with pytest.raises(UsageError) as caught:
        evals_repro.run(retriever=Oracle(), name="bm25", results_dir=tmp_path / "r")
    assert caught.value.one_line().startswith(
        "method 'bm25' (Python object test_python_objects:Oracle) clashes with the built-in "
        "method 'bm25' (built-in, evals_repro.retrieval.bm25)"
    )
    with pytest.raises(UsageError, match=r"method 'minilm' \(Python object.*built-in embedder 'minilm'"):
        evals_repro.run(retriever=Oracle(), name="minilm", results_dir=tmp_path / "r")
    assert METHODS.get("bm25").plugin is None  # the built-in is untouched


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"retriever": Oracle()}, "name= is missing"),
        ({"retriever": Oracle(), "embedder": BagEmbedder(), "name": "a"}, "retriever= and embedder= both"),
        ({"method": "bm25", "retriever": Oracle(), "name": "a"}, "method 'bm25' and retriever= both"),
        ({"retriever": Oracle, "name": "a"}, "method object test_python_objects.Oracle is a class, not an instance"),
        ({"retriever": Oracle(), "name": "a+b"}, "name='a+b' for the method object"),
        ({}, "no method given"),
    ],
)
def test_bad_object_arguments(tmp_path, kwargs, message):
    with pytest.raises(UsageError) as caught:
        evals_repro.run(results_dir=tmp_path / "r", **kwargs)
    assert caught.value.one_line().startswith(message)


class Wide:
    name = "wide"
    model = "w"
    dimension = None
    supports_images = False
    text_style = evals_repro.PageStyle.LABELLED
    batch_size = 2

    def __init__(self, widths):
        self.widths = list(widths)

    def embed(self, items, input_type):
        return np.ones((len(items), self.widths.pop(0)), dtype=np.float32)

    def describe(self):
        return {}


def test_guarded_embedder_checks_every_call():
    """Each call's rows, one check at a time (base/contracts.py), the check named: shape, width."""
    items = [evals_repro.EmbedItem(text=f"item {i}") for i in range(4)]
    rows = GuardedEmbedder(Wide([3, 3]), "wide", Usage()).embed(items, "document")
    assert rows.shape == (4, 3) and np.allclose(np.linalg.norm(rows, axis=1), 1.0)
    with pytest.raises(
        ComponentError, match="embed[(][)] failed the width check: rows of width 5, earlier rows have 3"
    ):
        GuardedEmbedder(Wide([3, 5]), "wide", Usage()).embed(items, "document")

    class Short(Wide):
        def embed(self, items, input_type):
            return np.ones((len(items) - 1, 3))

    with pytest.raises(
        ComponentError, match=r"failed the shape check: it returned shape \(1, 3\) for 2 document items"
    ):
        GuardedEmbedder(Short([]), "wide", Usage()).embed(items, "document")

    class BadBudget(Wide):
        requests_per_minute = -1

    with pytest.raises(UsageError, match="requests_per_minute = -1 is not a whole number >= 0"):
        GuardedEmbedder(BadBudget([]), "wide", Usage())


def test_guarded_embedder_keeps_the_declared_budget():
    """2 requests per (0.4 s) window, 1 item per call: 6 calls need at least 2 full windows of waiting."""

    class Limited(Wide):
        requests_per_minute = 2
        batch_size = 1

    items = [evals_repro.EmbedItem(text=f"item {i}") for i in range(6)]
    usage = Usage()
    started = time.monotonic()
    GuardedEmbedder(Limited([3] * 6), "limited", usage, window=0.4).embed(items, "document")
    assert time.monotonic() - started >= 0.75
    assert usage.get("limited_requests") == 6 and usage.get("limited_wait_seconds") >= 0.75
    started = time.monotonic()
    GuardedEmbedder(Wide([3] * 3), "free", Usage(), window=0.4).embed(items, "document")
    assert time.monotonic() - started < 0.3


def test_the_readme_python_object_example_runs(tmp_path, monkeypatch):
    """The README's "Python objects" example, as written, up to its first run (the others need the reader's classes)."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = readme.split("### Python objects\n\n```python\n", 1)[1].split("```", 1)[0]
    statements = ast.parse(block).body
    first_run = next(i for i, node in enumerate(statements) if "evals_repro.run(" in ast.unparse(node))
    monkeypatch.chdir(tmp_path)
    exec(compile(ast.Module(statements[: first_run + 1], []), "README.md", "exec"), {"__name__": "readme_example"})
    written = sorted(p.name for p in (tmp_path / "results" / "sample" / "bm25+short-first@20").glob("*.json"))
    assert written == ["clinical-trials.json", "heat-pumps.json", "railway-maintenance.json"]


def test_an_object_describing_itself_with_numpy_values_is_recorded(tmp_path):
    class Tuned(Oracle):
        def describe(self):
            return {"alpha": np.float32(0.5), "layers": np.int64(3)}

    results = tmp_path / "results"
    summary = evals_repro.run(retriever=Tuned(), name="tuned", subsets=["heat-pumps"], results_dir=results)
    assert [o.status for o in summary.outcomes] == ["written"]
    config = record(results, "tuned")["config"]
    assert config["retriever"] == {"alpha": 0.5, "layers": 3}
    assert config["pipeline"]["plugins"]["tuned"]["describe"] == {"alpha": 0.5, "layers": 3}


def test_a_retriever_object_under_a_reranker_object(tmp_path):
    """Both objects: the first stage is filed under name=, the reranker under its own `.name`."""
    results = tmp_path / "results"
    summary = evals_repro.run(
        retriever=Oracle(), reranker=LengthReranker(), name="oracle", subsets=["heat-pumps"], results_dir=results
    )
    assert summary.method == "oracle+length@50" and [o.status for o in summary.outcomes] == ["written"]
    plugins = record(results, "oracle+length@50")["config"]["pipeline"]["plugins"]
    assert {k: v["target"] for k, v in plugins.items()} == {
        "oracle": "test_python_objects:Oracle",
        "length": "test_python_objects:LengthReranker",
    }
    assert METHODS.get("oracle") is None and RERANKERS.get("length") is None


def tokens_by_hand(text: str) -> int:
    """The documented estimate every budget and plan uses: ASCII characters / 3 rounded up, plus one per
    other character (providers.batching.estimate_tokens), written out here from that definition."""
    other = sum(1 for ch in text if ord(ch) > 127)
    return max(1, -(-(len(text) - other) // 3) + other)


def test_objects_spend_is_price_unknown_never_free(tmp_path):
    """An object's cost is outside the price table: billed as estimated input tokens under provider
    `plugin` (the retriever by its run name, the reranker by its model), so the record says "price unknown"
    and usd None, never 0. Reference: the tokens of the texts the objects were handed, counted here."""

    class Seeing(Oracle):
        def __init__(self):
            self.queries = []

        def run(self, subset, queries, top_k):
            self.queries += [q.text for q in queries]
            return super().run(subset, queries, top_k)

    class Counting(LengthReranker):
        def __init__(self):
            super().__init__()
            self.calls = []

        def rerank(self, query, documents):
            self.calls.append((query, list(documents)))
            return super().rerank(query, documents)

    retriever, reranker = Seeing(), Counting()
    results = tmp_path / "results"
    evals_repro.run(retriever=retriever, reranker=reranker, name="seeing", subsets=["heat-pumps"], results_dir=results)
    cost = record(results, "seeing+length@50")["cost"]
    assert len(retriever.queries) == 26 and len(reranker.calls) == 26
    reranked = sum(tokens_by_hand(q) * len(docs) + sum(tokens_by_hand(d) for d in docs) for q, docs in reranker.calls)
    assert cost["billed"] == {
        "plugin chars": {"input_tokens": reranked},
        "plugin seeing": {"input_tokens": sum(tokens_by_hand(q) for q in retriever.queries)},
    }
    assert cost["usd"] is None and cost["by_model"] == {"plugin chars": None, "plugin seeing": None}
    assert cost["price_unknown"] == ["plugin chars (input_tokens)", "plugin seeing (input_tokens)"]


class PictureBagEmbedder(BagEmbedder):
    """BagEmbedder that also says it takes page images."""

    supports_images = True


def test_what_an_embedder_accepts_is_read_from_its_supports_images():
    """`methods` and the `--content images` refusal read the same attribute: an object or plugin class
    saying False is listed as markdown only, True as markdown and images; a factory function (whose
    embedder exists only once called) is undecided until built."""
    from evals_repro.base.identity import PluginOrigin
    from evals_repro.base.registry import Entry, PluginFactory
    from evals_repro.methods.plugins import accepted_contents, object_entry

    assert accepted_contents(object_entry("embedder", "bag", BagEmbedder())) == ("markdown",)
    assert accepted_contents(object_entry("embedder", "pic", PictureBagEmbedder())) == ("markdown", "images")
    origin = PluginOrigin("some-dist", "2.0", "evals_repro.embedders", "some_dist:thing")

    def plugin_entry(target) -> Entry:
        factory = PluginFactory(lambda: target, origin, "embedder", "thing")
        return Entry("embedder", "thing", factory, contents=("markdown", "images"), module="some_dist", plugin=origin)

    assert accepted_contents(plugin_entry(BagEmbedder)) == ("markdown",)
    assert accepted_contents(plugin_entry(PictureBagEmbedder)) == ("markdown", "images")
    assert accepted_contents(plugin_entry(lambda: BagEmbedder())) is None
    assert accepted_contents(EMBEDDERS.require("minilm")) == ("markdown",)  # a built-in: its registered contents


# -- the Python API's own surface ------------------------------------------------------------------------


def test_an_unknown_keyword_is_a_type_error_naming_the_valid_ones(tmp_path):
    with pytest.raises(TypeError) as caught:
        evals_repro.run("bm25", results_dir=tmp_path / "r", workerz=4)
    message = str(caught.value)
    assert message.startswith("run() got an unexpected keyword argument 'workerz' (did you mean 'workers'?); it takes")
    assert all(f" {name}," in message or message.endswith(f" {name}") for name in ("workers", "voyage_tpm", "subsets"))
    assert not (tmp_path / "r").exists()  # refused before any work
    with pytest.raises(TypeError, match=r"'subset' \(did you mean 'subsets'\?\), and 1 more \('topk'\)"):
        evals_repro.run("bm25", results_dir=tmp_path / "r", subset=["heat-pumps"], topk=5)


def test_the_api_takes_the_run_commands_options_and_no_others():
    """Every option `evals-repro run` has is a keyword of `evals_repro.run` (the command's flags, underscored):
    the list the API checks against cannot drift from the command."""
    import inspect

    from evals_repro.cli import command_tree
    from evals_repro.runner.run_request import RUN_OPTIONS

    command = command_tree().commands["run"]
    flags = {param.name for param in command.params}
    cli_only = {"plan", "max_cost", "prices"}  # the cost gate is the command's (`run --plan` / `--max-cost`)
    renamed = {"subsets": "subsets", "measure": "measures"}
    keywords = set(inspect.signature(evals_repro.run).parameters) - {
        "options",
        "retriever",
        "embedder",
        "reranker",
        "name",
    }
    assert {renamed.get(flag, flag) for flag in flags - cli_only} == keywords | set(RUN_OPTIONS)


def test_a_clash_of_the_rerankers_own_name_says_to_rename_the_reranker(tmp_path):
    """With a first-stage object, name= names the first stage and the reranker is filed under its .name: a
    clash of that .name is fixed on the reranker, not by another name=."""

    class Cohere(LengthReranker):
        name = "cohere"  # a built-in reranker's name

    with pytest.raises(UsageError) as caught:
        evals_repro.run(retriever=Oracle(), name="tfidf-dev2", reranker=Cohere(), results_dir=tmp_path / "r")
    line = caught.value.one_line()
    assert "reranker 'cohere' (Python object test_python_objects:" in line and "clashes with the built-in" in line
    assert line.endswith(
        "set another .name on the reranker object Cohere (it is filed under its .name 'cohere'; name='tfidf-dev2' "
        "names the first stage)"
    )
    assert "another name=" not in line
    # alone, the reranker is filed under name=, and name= is what to change
    with pytest.raises(UsageError) as alone:
        evals_repro.run("bm25", reranker=Cohere(), name="cohere", results_dir=tmp_path / "r")
    assert alone.value.hint.startswith("give your object another name=")


def test_dir_lists_the_public_api_and_it_is_typed():
    import typing

    from evals_repro.retrieval.base import Retriever

    exported = {"run", "evaluate", "Retriever", "Embedder", "Reranker", "EmbedItem", "InputType", "MethodContext"}
    assert dir(evals_repro) == sorted(evals_repro.__all__) and exported <= set(dir(evals_repro))
    assert set(evals_repro.__all__) == set(evals_repro._EXPORTS)
    assert "Any" not in dir(evals_repro) and "annotations" not in dir(evals_repro)
    hints = typing.get_type_hints(evals_repro.run)
    assert hints["retriever"] == Retriever | None and hints["top_k"] is int
    # what type checkers see: every export imported under TYPE_CHECKING, and the package marked as typed
    source = Path(evals_repro.__file__)
    tree = ast.parse(source.read_text(encoding="utf-8"))
    guarded = next(n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test))
    imported = {alias.name for node in guarded.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert imported == set(evals_repro.__all__)
    assert (source.parent / "py.typed").is_file()

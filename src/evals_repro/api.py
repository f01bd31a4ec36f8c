"""The Python API: what the CLI does, as two functions a notebook can call.

    import evals_repro
    summary = evals_repro.run("bm25", benchmark="sample", setting="crosslingual")
    scores = evals_repro.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.9, "d2": 0.5}}, ["ndcg_at_10", "map"])
    scores.mean["ndcg_at_10"], scores.per_query["q1"]["map"]

`run` writes the same result records and saved runs as `evals-repro run` and returns a `RunSummary`
(outcome per subset, failures, usage); `evaluate` scores in memory, trec_eval-style. Messages go to
the `evals_repro` logger rather than to stdout.

Your own model runs beside the built-ins as a Python object implementing one of the protocols
exported from `evals_repro` (`Retriever`, `Embedder`, `Reranker`), filed under the name you give:

    evals_repro.run(embedder=MyEmbedder(), name="my-embedder")         # cached, over the exact index
    evals_repro.run(retriever=MyRetriever(), name="my-retriever", rerank="cohere")
    evals_repro.run("bm25", reranker=MyReranker(), name="my-reranker", rerank_depth=20)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base.errors import UsageError
from .embedders.base import Embedder
from .rerankers.base import Reranker
from .retrieval.base import Retriever
from .runner.evaluation import run_benchmark
from .runner.run_request import RUN_OPTIONS, RunRequest, RunSummary


@dataclass(frozen=True)
class Scores:
    """Per-query scores (`{qid: {measure: value}}`) and their macro means (`{measure: value}`)."""

    per_query: dict[str, dict[str, float]]
    mean: dict[str, float]


def run(
    method: str | None = None,
    benchmark: str = "sample",
    *,
    subsets: Sequence[str] | None = None,
    setting: str = "monolingual",
    top_k: int = 100,
    measures: Sequence[str] | None = None,
    results_dir: str | Path = "results",
    cache_dir: str | Path = "cache",
    resume: bool = False,
    content: str = "markdown",
    revision: str | None = None,
    language: str | None = None,
    tie_rule: str = "group-mean",
    score_precision: str = "float32",
    rerank: str | None = None,
    rerank_depth: int | None = None,
    retriever: Retriever | None = None,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    name: str | None = None,
    **options: Any,
) -> RunSummary:
    """Evaluate `method` on `benchmark` (see `evals-repro run --help`); `options` are the provider and
    method options, the command's flags with underscores (`workers=4`, `voyage_tpm=...`, `rerank_top_k=10`,
    ...): any other keyword is a TypeError naming the valid ones.

    Instead of a method name, give your own first stage as `retriever=` (a `Retriever`) or `embedder=`
    (an `Embedder`: it gets the embedding cache and the exact index), filed under `name`; `reranker=`
    (a `Reranker`) reranks any first stage, a method name or your object (it is filed under `name`
    when it is the only object, else under its own `.name`). An object missing a protocol member is
    refused before any work (UsageError); one that raises, or returns what its protocol does not allow,
    fails its subset (a ComponentError in `summary.failures`) and the others go on."""
    _check_keywords(options)
    with _objects(method, retriever, embedder, reranker, name) as (method_name, rerank_name):
        if rerank_name is not None:
            if rerank is not None:
                raise UsageError(f"reranker= and rerank={rerank!r} both give a reranker", "give one of them")
            rerank = rerank_name
        request = RunRequest(
            method=method_name,
            benchmark=benchmark,
            subsets=list(subsets) if subsets else None,
            setting=setting,
            top_k=top_k,
            results_dir=Path(results_dir),
            cache_dir=Path(cache_dir),
            resume=resume,
            content=content,
            revision=revision,
            measures=list(measures) if measures else None,
            language=language,
            tie_rule=tie_rule,
            score_precision=score_precision,
            rerank=rerank,
            rerank_depth=rerank_depth,
            options=dict(options),
        )
        return run_benchmark(request)


def _check_keywords(options: dict[str, Any]) -> None:
    """A keyword `run` does not take is a TypeError (as Python says it for any function), naming the valid ones."""
    unknown = sorted(set(options) - set(RUN_OPTIONS))
    if not unknown:
        return
    import difflib
    import inspect

    parameters = [p for p in inspect.signature(run).parameters if p not in ("method", "benchmark", "options")]
    valid = sorted(parameters) + sorted(RUN_OPTIONS)
    close = difflib.get_close_matches(unknown[0], valid, n=1)
    raise TypeError(
        f"run() got an unexpected keyword argument {unknown[0]!r}"
        + (f" (did you mean {close[0]!r}?)" if close else "")
        + (f", and {len(unknown) - 1} more ({', '.join(map(repr, unknown[1:]))})" if len(unknown) > 1 else "")
        + f"; it takes method, benchmark and the keywords {', '.join(valid)}"
    )


@contextmanager
def _objects(
    method: str | None, retriever: Any, embedder: Any, reranker: Any, name: str | None
) -> Iterator[tuple[str, str | None]]:
    """Hold the user's objects in the registries for one run: (the method name to run, the reranker's name)."""
    from .methods.plugins import REGISTRIES, object_entry

    first = [(kind, obj) for kind, obj in (("method", retriever), ("embedder", embedder)) if obj is not None]
    if len(first) > 1:
        raise UsageError("retriever= and embedder= both give a first stage", "give one of them")
    if first and method is not None:
        raise UsageError(
            f"method {method!r} and {'retriever' if retriever is not None else 'embedder'}= both give a first stage",
            "drop the method name, or the object",
        )
    if not first and method is None:
        raise UsageError("no method given", "name one (e.g. run('bm25')), or pass retriever=, embedder=")
    if (first or reranker is not None) and not name:
        raise UsageError("name= is missing", "results of your object are filed under the name you give, e.g. 'mine'")
    with ExitStack() as stack:
        method_name = method
        if first:
            kind, obj = first[0]
            assert name is not None
            stack.enter_context(REGISTRIES[kind].temporarily(object_entry(kind, name, obj)))
            method_name = name
        rerank_name = None
        if reranker is not None:
            rerank_name = name if not first else getattr(reranker, "name", "")
            try:
                entry = object_entry("reranker", str(rerank_name), reranker)
                stack.enter_context(REGISTRIES["reranker"].temporarily(entry))
            except UsageError as exc:
                if not first:
                    raise
                # name= names the first stage here: the reranker is filed under its own .name, so that is what to change
                raise UsageError(
                    exc.message,
                    f"set another .name on the reranker object {type(reranker).__name__} (it is filed under its "
                    f".name {rerank_name!r}; name={name!r} names the first stage)",
                ) from None
        assert method_name is not None
        yield method_name, rerank_name


def evaluate(
    qrels: Mapping[str, Mapping[str, int]] | str | Path,
    run: Mapping[str, Mapping[str, float]] | str | Path,
    measures: Sequence[str] | None = None,
    **options: Any,
) -> Scores:
    """Score a run against qrels (dicts, or TREC files) like `trec_eval -c`; `measures` default to the standard set."""
    from . import metrics as M

    judgments = M.read_trec_qrels(qrels) if isinstance(qrels, (str, Path)) else qrels
    ranking = M.read_trec_run(run) if isinstance(run, (str, Path)) else run
    names = M.parse_measures(list(measures)) if measures else list(M.DEFAULT_MEASURES)
    per_query = M.evaluate(judgments, ranking, names, options=options)
    return Scores(per_query={q: dict(v) for q, v in per_query.items()}, mean=M.mean(per_query))

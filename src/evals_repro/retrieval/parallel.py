"""Per-query work in a thread pool with a progress bar: hosted searches and reranks wait on the network."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ..base.data import Query, Run
from ..base.progress import progress_bar


def run_queries(
    description: str, queries: list[Query], workers: int, score: Callable[[Query], dict[str, float]]
) -> Run:
    """`score(query)` for every query, `workers` at a time; the first failure stops the queued rest."""
    run: Run = {}
    with progress_bar(description, len(queries)) as bar:
        pool = ThreadPoolExecutor(max_workers=max(1, workers))
        try:
            for query, scores in zip(queries, pool.map(score, queries)):
                run[query.id] = scores
                bar.advance()
        finally:  # do not pay for queued calls once one has failed
            pool.shutdown(wait=True, cancel_futures=True)
    return run

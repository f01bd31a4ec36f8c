"""A reranker over any first stage: rerank the top `depth` candidates, keep the rest below them.

Candidates past the depth keep their first-stage order and are placed under every reranked
score, so ranks 1..depth are the reranker's and the metrics there are meaningful; metrics at
cut-offs deeper than `depth` mix two rankings and are flagged through `meaningful_depth`.
A paid reranker's answers (and a plugin's or Python object's, keyed by its identity) are journaled as they arrive
(`call_journal.CallJournal`), so a killed run pays on resume only for the calls that had not answered.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..base.call_journal import CallJournal, journal_path
from ..base.data import Query, Run, Subset
from ..base.errors import UsageError
from ..base.identity import reuse_key
from ..base.rendering import PageStyle, page_text, query_text
from ..base.rendering import describe as describe_style
from ..metrics.ranking import trec_ranked as ranked
from ..providers.plan import Plan
from ..retrieval.parallel import run_queries
from .base import Reranker
from .fitting import DocumentTooLong

log = logging.getLogger(__name__)
PAGE_STYLE = PageStyle.PLAIN  # what every reranker reads for a page, here and in the reranking study


def merge_reranked(candidates: list[tuple[str, float]], depth: int, scores: list[float]) -> dict[str, float]:
    """Reranked head (reranker scores) over the untouched tail (first-stage order kept, scored below)."""
    head = candidates[:depth]
    if len(scores) != len(head):
        raise ValueError(f"reranker returned {len(scores)} scores for {len(head)} documents")
    merged = {doc_id: float(score) for (doc_id, _), score in zip(head, scores)}
    floor = min(merged.values(), default=0.0) - 1.0
    for position, (doc_id, _) in enumerate(candidates[depth:], start=1):
        merged[doc_id] = floor - position
    return merged


class RerankedRetriever:
    """`<first stage>+<reranker>@<depth>`: the Retriever protocol around a first stage and a Reranker."""

    def __init__(
        self,
        first: Any,
        reranker: Reranker,
        depth: int | None,
        name: str | None = None,
        workers: int | None = None,
        journal_dir: Path | None = None,
    ) -> None:
        self.first = first
        self.journal_dir = journal_dir  # where a paid reranker's answers are journaled (None: not journaled)
        self.reranker = reranker
        self.depth = None if depth is None else int(depth)  # None: every candidate the first stage returns
        self.name = name or f"{first.name}+{reranker.name}" + (f"@{self.depth}" if self.depth else "")
        chosen: int = workers or getattr(reranker, "workers", None) or 4
        self.workers = max(1, int(chosen))

    @property
    def meaningful_depth(self) -> int | None:
        """Metrics at cut-offs above this depth are not the reranker's alone; the runner flags them
        (None: every candidate is reranked)."""
        return self.depth

    def plan(self, subset: Subset, queries: list[Query], top_k: int, plan: Plan) -> None:
        """The first stage's requests, then one rerank per query over its head. Which pages the head holds
        is the first stage's answer, so their tokens are estimated at the mean page of the subset."""
        from ..providers.batching import estimate_tokens
        from ..providers.plan import text_prior

        first_plan = getattr(self.first, "plan", None)
        if first_plan is not None:
            first_plan(subset, queries, top_k, plan)
        planner = getattr(self.reranker, "plan", None)
        if planner is None or not subset.pages:
            return  # a local reranker: nothing paid
        depth = min(top_k if self.depth is None else self.depth, top_k)
        pages = [page_text(p, PAGE_STYLE) for p in subset.pages]
        mean = round(sum(estimate_tokens(text) for text in pages) / len(pages))
        texts = [query_text(query, reranker=True) for query in queries]
        prior = text_prior(pages + texts)
        for query, text in zip(queries, texts):
            # at most the pages there are, or the query's pool where the subset ranks pools
            candidates = len(subset.pools.get(query.id, ())) if subset.pools is not None else len(subset.pages)
            planner(estimate_tokens(text), [mean] * min(depth, candidates), plan, prior=prior)
        plan.note("rerank tokens are estimated at the mean page length: the first stage chooses the pages")

    def run(self, subset: Subset, queries: list[Query], top_k: int) -> Run:
        if self.depth is not None and self.depth > top_k:
            raise UsageError(
                f"method {self.name}: rerank depth {self.depth} is larger than the first stage's top-k {top_k}",
                f"raise --top-k to at least {self.depth} or lower the depth (+{self.reranker.name}@{top_k})",
            )
        depth = top_k if self.depth is None else self.depth
        first_run = self.first.run(subset, queries, top_k)
        pages = subset.page_by_id()

        journal = None
        if self.journal_dir is not None:
            journal = CallJournal(journal_path(self.journal_dir, self.name, subset.name), reuse_key(self.reranker))

        def rerank_one(query: Query) -> dict[str, float]:
            candidates = ranked(first_run.get(query.id, {}), top_k)
            head = candidates[:depth]
            documents = [page_text(pages[doc_id], PAGE_STYLE) for doc_id, _ in head]
            text = query_text(query, reranker=True)
            try:
                if not documents:
                    scores: list[float] = []
                elif journal is not None:
                    scores = journal.answer(
                        [text, *documents],
                        lambda: self.reranker.rerank(text, documents),
                        lambda answer: [float(s) for s in answer],
                    )
                else:
                    scores = self.reranker.rerank(text, documents)
            except DocumentTooLong as exc:  # the reranker knows the text, this loop the page
                raise exc.named(f"page {head[exc.index][0]} (query {query.id})") from None
            return merge_reranked(candidates, depth, scores)

        try:
            return run_queries(f"rerank {subset.name} ({self.reranker.name})", queries, self.workers, rerank_one)
        finally:
            if journal is not None:
                journal.close()
                if journal.reused:
                    log.info(
                        "rerank %s: %d answer(s) reused from %s (paid for by an earlier run)",
                        subset.name,
                        journal.reused,
                        journal.path,
                    )

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "first_stage": self.first.describe(),
            "reranker": self.reranker.describe(),
            "rerank_depth": self.depth,
            "meaningful_depth": self.meaningful_depth,
            "rendering": describe_style(PAGE_STYLE),
            "query": "text, then its instruction when it has one",
        }

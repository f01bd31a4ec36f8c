"""Legal RAG Bench's own retrieval measure, `relevant_passage_in_context_at_{k}` (the benchmark reports k = 5).

As the benchmark's evaluation computes `relevant_passage_in_context` (isaacus-dev/legal-rag-bench eval.py
@ 9e30a36, retrieval at k = 5): a query scores 1 when the id of a relevant passage (grade >= the protocol's
relevance level) is contained in the id of one of the k passages retrieved first, else 0. Containment, not
equality: a gold `p-0001` also counts as found when `p-00017` is retrieved, which nDCG@10 and every other
measure here (exact ids) do not. Rankings follow the protocol's order (trec_eval's, ties by doc id
descending); a query without results scores 0.
"""

from __future__ import annotations

import re

from ..protocol import EvalData, Family, Measure, PerQuery, register
from ..ranking import ranked_docs

NAME = "relevant_passage_in_context_at_{k}"
_FORM = re.compile(r"relevant_passage_in_context_at_([1-9][0-9]*)")


def passage_in_context(gold: list[str], retrieved: list[str]) -> bool:
    """Is some gold id a substring of some retrieved id?"""
    return any(rel in doc for rel in gold for doc in retrieved)


def _compute(measures: list[Measure], data: EvalData) -> PerQuery:
    protocol = data.protocol
    out: PerQuery = {}
    for qid in data.qids:
        gold = [doc for doc, grade in data.qrels[qid].items() if grade >= protocol.relevance_level]
        row = {}
        for measure in measures:
            assert measure.cutoff is not None
            top = ranked_docs(data.run[qid], protocol.score_precision, measure.cutoff)
            row[measure.name] = 1.0 if passage_in_context(gold, top) else 0.0
        out[qid] = row
    return out


def _parse(text: str) -> Measure | None:
    match = _FORM.fullmatch(text)
    if match is None:
        return None
    k = int(match.group(1))
    return Measure(f"relevant_passage_in_context_at_{k}", f"relevant_passage_in_context_{k}", _compute, cutoff=k)


FAMILY = register(Family("passage_in_context", (NAME,), _parse))

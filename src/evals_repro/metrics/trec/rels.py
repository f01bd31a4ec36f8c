"""One query's ranking as trec_eval's measures see it: the relevance grade at each rank.

For the measures computed here rather than by pytrec_eval (iprec_at_recall, 11pt_avg, rbp,
unj, judged_at_k, relstring). As trec_eval's form_res_rels: the run is ordered under the
protocol, cut to -M results, then (with -J) unjudged documents are dropped; a judged query
without results is trec_eval 10's -c stand-in (complete.py). A document not in
the qrels reads NONPOOL (-1), one judged with a negative grade UNJUDGED (-2).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol import EvalData
from ..ranking import ranked_docs
from .complete import scores

NONPOOL = -1
UNJUDGED = -2


@dataclass(frozen=True)
class Ranked:
    rels: list[int]  # grade at each rank (NONPOOL / UNJUDGED for unjudged documents)
    num_rel: int  # judged documents with grade >= relevance level
    num_rel_ret: int
    levels: dict[int, int]  # grade -> number of judged documents (grades >= 0), for gains


def ranked(data: EvalData, qid: str) -> Ranked:
    cache = data.cache.setdefault("ranked", {})
    found = cache.get(qid)
    if found is not None:
        return found
    protocol = data.protocol
    judged = data.qrels[qid]
    order = ranked_docs(scores(data, qid), protocol.score_precision, protocol.max_results)
    rels = [(UNJUDGED if (g := judged[doc]) < 0 else g) if doc in judged else NONPOOL for doc in order]
    if protocol.judged_only:
        rels = [r for r in rels if r >= 0]
    level = protocol.relevance_level
    levels: dict[int, int] = {}
    for grade in judged.values():
        if grade >= 0:
            levels[grade] = levels.get(grade, 0) + 1
    found = Ranked(
        rels=rels,
        num_rel=sum(n for grade, n in levels.items() if grade >= level),
        num_rel_ret=sum(1 for r in rels if r >= level),
        levels=levels,
    )
    cache[qid] = found
    return found

"""trec_eval 10's `-c`: how a judged query without results is scored, quirks included.

trec_eval 10 does not score an empty ranking: it scores a stand-in ranking of one unjudged
document (`ceci_nest_pas_un_docno`, score 1), then zeroes the values that stand-in would
disturb, matching each by its printed name exactly: `num_ret`, `utility`, `rbp_resid`, every
`unj_*`, and the text `relstring`. A measure asked with parameters prints another name
(`utility_3,-2,1,0`, `rbp_resid_p=0.95`, `relstring_5`) and keeps its stand-in value: a
utility counts one retrieved non-relevant document, rbp_resid_p=0.95 is 1, relstring_5 is `-`.
Under -J the stand-in is dropped, so the ranking is empty (iprec_at_recall is then 0/0: NaN,
printed `-nan`, as trec_eval prints it). With -c, trec_eval's `all` value of num_rel counts every
judgment with a grade > 0, whatever -l says. We follow all of it under both score precisions
(trec_eval 9's -c differs in other ways: see the report of issue trec10).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..protocol import EvalData, Measure, PerQuery

STAND_IN_DOC = "ceci_nest_pas_un_docno"
STAND_IN: dict[str, float] = {STAND_IN_DOC: 1.0}
ZEROED = ("num_ret", "utility", "rbp_resid")


def absent(data: EvalData, qid: str) -> bool:
    """A judged query the run has no result for, scored under -c (it gets the stand-in ranking)."""
    return data.protocol.complete and not data.run[qid]


def scores(data: EvalData, qid: str) -> Mapping[str, float]:
    """One query's scores as trec_eval's measures see them (the stand-in for an absent query)."""
    return STAND_IN if absent(data, qid) else data.run[qid]


def zeroed(trec_name: str) -> bool:
    """Is this printed name one that trec_eval 10 zeroes for an absent query?"""
    return trec_name in ZEROED or trec_name.startswith("unj")


def clean(per_query: PerQuery, measures: Iterable[Measure], data: EvalData) -> None:
    """Zero, in place, what trec_eval 10 zeroes for absent queries (trec_eval measures only)."""
    from .table import TrecMeasure

    names = [m.name for m in measures if isinstance(m, TrecMeasure) and zeroed(m.trec_name)]
    if not names or not data.protocol.complete:
        return
    for qid in data.qids:
        if not data.run[qid]:
            row = per_query[qid]
            for name in names:
                if name in row:
                    row[name] = 0.0


def num_rel_total(qrels: Mapping[str, Mapping[str, int]], qids: Iterable[str]) -> int:
    """trec_eval's `all` num_rel under -c: judgments with a grade > 0 over the scored queries (-l ignored)."""
    return sum(1 for qid in qids for grade in qrels[qid].values() if grade > 0)

"""Scoring one dataset of the study: the frozen candidates, one run over them, its declared measures.

Measure names are the metrics package's (`ndcg_at_10`, `map_at_100`, `alpha_ndcg_at_10`,
`nugget_coverage_at_20`, `p_mrr`), optionally restricted to one instruction variant:
`ndcg_at_10[og]` averages over the `og` queries only. Every query with a positive judgment counts
(a query the run does not cover scores 0, as trec_eval -c does); nugget measures read each
candidate's `subtopics`, p-MRR its `pair`, `variant` and `changed_docs`, with documents missing
from a ranking at rank `depth + 1` (101 for the study's top 100).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ..base.errors import UsageError
from .candidates import Candidate

_VARIANT = re.compile(r"(?P<base>[^\[\]]+)(\[(?P<variant>[A-Za-z0-9_-]+)\])?")


def parse_study_measure(name: str) -> tuple[str, str | None]:
    """(measure, variant or None) of `ndcg_at_10[og]`; UsageError for an unknown measure."""
    from .. import metrics as M

    match = _VARIANT.fullmatch(name.strip())
    if match is None:
        raise UsageError(f"study measure '{name}' is not valid", "write e.g. ndcg_at_10 or ndcg_at_10[og]")
    base = M.get_measure(match.group("base")).name
    return base, match.group("variant")


def check_measures(names: Iterable[str]) -> None:
    for name in names:
        parse_study_measure(name)


def score(
    candidates: list[Candidate],
    run: Mapping[str, Mapping[str, float]],
    measures: list[str],
    depth: int,
    *,
    ignore_identical_ids: bool = False,
) -> dict[str, float]:
    """{measure: mean over the dataset's queries} for one run over these candidates (`ignore_identical_ids`:
    mteb's rule for tasks such as FiQA2018, a document whose id is the query's is dropped first)."""
    return score_queries(candidates, run, measures, depth, ignore_identical_ids=ignore_identical_ids)[0]


def score_queries(
    candidates: list[Candidate],
    run: Mapping[str, Mapping[str, float]],
    measures: list[str],
    depth: int,
    *,
    ignore_identical_ids: bool = False,
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """`score`'s means, and {measure: {query: value}} for every measure that is a mean over queries (not
    p-MRR, a pair measure): the queries each mean is taken over, for paired comparisons."""
    from .. import metrics as M
    from ..metrics.published.p_mrr import p_mrr

    parsed = {name: parse_study_measure(name) for name in measures}
    qrels = {c.query_id: c.qrels for c in candidates}
    subtopics = {c.query_id: c.extra["subtopics"] for c in candidates if "subtopics" in c.extra}
    bases = list(dict.fromkeys(base for base, _ in parsed.values() if base != "p_mrr"))
    protocol = M.ScoringProtocol(measures=tuple(bases), ignore_identical_ids=ignore_identical_ids) if bases else None
    per_query = M.evaluate(qrels, run, protocol, subtopics=subtopics or None) if protocol is not None else {}
    out: dict[str, float] = {}
    queries: dict[str, dict[str, float]] = {}
    for name, (base, variant) in parsed.items():
        if base == "p_mrr":
            changed = {
                str(c.extra["pair"]): list(c.extra.get("changed_docs", [])) for c in candidates if "pair" in c.extra
            }
            out[name] = p_mrr(run, changed, depth=depth)
            continue
        qids = [c.query_id for c in candidates if variant is None or c.extra.get("variant") == variant]
        out[name] = M.mean(per_query, qids).get(base, 0.0) if qids else float("nan")
        queries[name] = {q: float(per_query[q][base]) for q in qids if q in per_query}
    return out, queries

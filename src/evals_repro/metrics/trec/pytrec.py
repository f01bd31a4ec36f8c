"""The pytrec_eval backend shared by every trec_eval measure it computes (nDCG, AP, P, recall, RR, ...).

All requested measures are computed in one evaluator pass over the run as given: pytrec_eval
casts scores to float32 and orders them like trec_eval 9, so the default protocol needs no copy
of the run. Under float64 (trec_eval 10) each ranking is ordered here and passed as rank scores;
under -M it is cut here in the protocol's order. A second pass is needed only when one measure
is asked with two parameter strings (`utility` and `utility.2,-1,0,0`). `mrr_at_{k}` is read off
`recip_rank` (see rr.py). pytrec_eval is imported here, lazily: it pulls in NumPy.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..protocol import EvalData, Measure, PerQuery
from ..ranking import rank_scores, ranked_docs, truncate
from .complete import scores
from .table import BASES, TrecMeasure


def prepared_run(data: EvalData) -> Mapping[str, Mapping[str, float]]:
    """The run as pytrec_eval should see it under the protocol (shared by the passes)."""
    cached = data.cache.get("pytrec_run")
    if cached is not None:
        return cached
    protocol = data.protocol
    depth = protocol.max_results
    run: Mapping[str, Mapping[str, float]]
    given = data.run
    if protocol.complete and not all(map(given.__getitem__, data.qids)):
        given = {qid: scores(data, qid) for qid in data.qids}  # trec_eval 10's -c stand-in (complete.py)
    if protocol.score_precision == "float32":
        run = given if depth is None else {qid: truncate(given[qid], depth) for qid in data.qids}
    else:
        run = {qid: rank_scores(ranked_docs(given[qid], "float64", depth)) for qid in data.qids}
    data.cache["pytrec_run"] = run
    return run


def _passes(measures: list[TrecMeasure]) -> list[dict[str, list[str | None]]]:
    """pytrec_eval requests: per pass, base -> parameters (merged cutoffs, or one parameter string)."""
    passes: list[dict[str, list[str | None]]] = [{}]
    for m in measures:
        base = BASES[m.base]
        spec_base = base.key or base.name
        if base.params in ("long", "double"):
            params = passes[0].setdefault(spec_base, [])
            if m.param not in params:
                params.append(m.param)
            continue
        target = next((p for p in passes if spec_base not in p or p[spec_base] == [m.param]), None)
        if target is None:
            target = {}
            passes.append(target)
        target[spec_base] = [m.param]
    return passes


def _spec(base: str, params: list[str | None]) -> str:
    if params == [None]:
        return base
    if BASES[base].params == "long":
        return f"{base}.{','.join(str(v) for v in sorted(int(p) for p in params if p is not None))}"
    return f"{base}.{','.join(p for p in params if p is not None)}"


def compute(measures: list[Measure], data: EvalData) -> PerQuery:
    import pytrec_eval_ext

    trec = [m for m in measures if isinstance(m, TrecMeasure)]
    qids = data.qids
    run = prepared_run(data)
    protocol = data.protocol
    results: PerQuery = {}
    for index, requests in enumerate(_passes(trec)):
        specs = {_spec(base, params) for base, params in requests.items()}
        evaluator = pytrec_eval_ext.RelevanceEvaluator(
            data.qrels, specs, protocol.relevance_level, protocol.judged_only
        )
        scored = evaluator.evaluate(run)
        wanted = [m for m in trec if _belongs(m, requests)]
        renamed = [(m.name, m.key) for m in wanted]
        # Nested comprehensions (inlined since Python 3.12): the fastest way to rename every query's values.
        rows = {qid: {name: row[key] for name, key in renamed} for qid, row in zip(qids, map(scored.__getitem__, qids))}
        # mrr_at_k: recip_rank counts only when the first relevant document is within rank k.
        for name, low in [(m.name, 1.0 / m.rr_cut) for m in wanted if m.rr_cut]:
            for row in rows.values():
                if row[name] < low:
                    row[name] = 0.0
        if index == 0:
            results = rows
        else:
            for qid, row in rows.items():
                results[qid].update(row)
    return results


def _belongs(m: TrecMeasure, requests: dict[str, list[str | None]]) -> bool:
    base = BASES[m.base]
    params = requests.get(base.key or base.name)
    if params is None:
        return False
    return m.param in params

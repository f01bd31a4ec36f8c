"""nDCG over float gains (RCP-nDCG), with the three tie rules of the rcp-ndcg release.

Linear gain, discount 1/log2(rank + 1). The ideal ranking takes every gain of the query (all
judged pages, retrieved or not); a query whose ideal DCG is 0 scores 0; a page without a gain
counts 0. The judged queries (those with gains) are scored, a judged query missing from the
run scoring 0 as in trec_eval -c; a run query absent from the gains is not scored.

Tie rules:
- `group-mean` (default, the paper's and mteb's rule): pages with identical scores form a group
  and each position the group occupies is credited the group's mean gain -- the expected DCG
  over all orderings of the tie. A group straddling the cutoff contributes its mean at each of
  its positions inside the cutoff.
- `doc-id`: score descending, then page id descending.
- `input-order`: score descending, ties kept in the order the run gives them (rcp-ndcg's TREC-DL
  tables pass judge-pool order; an order built from relevance leaks it into the ties).

Scores are always compared exactly as given (doubles), as rcp-ndcg does, whatever the run's
`score_precision`: 0.30000001 ranks above 0.3 under every rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

from ...base.errors import DataError, UsageError
from ..protocol import DEFAULT_TIE_RULE, TIE_RULES, check_tie_rule, running_mean

__all__ = ["DEFAULT_TIE_RULE", "TIE_RULES", "check_tie_rule", "dcg_at_k", "ndcg_float_at_k", "read_trec_gains"]


def _discounts(k: int) -> list[float]:
    return [1.0 / math.log2(rank + 1) for rank in range(1, k + 1)]


def check_gains(gains: Mapping[str, float], where: str = "") -> None:
    """Negative or non-finite gains are data errors, never silently clipped."""
    for doc, gain in gains.items():
        if not (isinstance(gain, (int, float)) and math.isfinite(gain) and gain >= 0):
            raise DataError(
                f"gain {gain!r} for page {doc}{where} is not a finite number >= 0",
                "gains are probabilities in [0, 1]; fix the gains file",
            )


def _check_scores(scores: Mapping[str, float], where: str) -> None:
    for doc, score in scores.items():
        if isinstance(score, float) and math.isnan(score):
            raise DataError(f"score NaN for page {doc}{where}", "drop or rescore NaN rows before evaluating")


def idcg_at_k(gains: Mapping[str, float], k: int) -> float:
    ideal = sorted(gains.values(), reverse=True)[:k]
    return sum(g * d for g, d in zip(ideal, _discounts(len(ideal))))


def dcg_at_k(
    scores: Mapping[str, float], gains: Mapping[str, float], k: int, tie_rule: str = DEFAULT_TIE_RULE
) -> float:
    return dcg_many_at_k(scores, (gains,), k, tie_rule)[0]


def dcg_many_at_k(
    scores: Mapping[str, float], gain_sets: Sequence[Mapping[str, float]], k: int, tie_rule: str = DEFAULT_TIE_RULE
) -> list[float]:
    """DCG@k of one ranking under several gain mappings (RCP gains and integer grades): ranked once."""
    tie_rule = check_tie_rule(tie_rule)
    if not scores:
        return [0.0 for _ in gain_sets]
    discounts = _discounts(min(k, len(scores)))
    if tie_rule != "group-mean":
        if tie_rule == "doc-id":
            order = sorted(scores, key=lambda d: (scores[d], d), reverse=True)[:k]
        else:  # input-order: sorted() is stable
            order = sorted(scores, key=lambda d: -scores[d])[:k]
        return [float(sum(gains.get(d, 0.0) * discounts[i] for i, d in enumerate(order))) for gains in gain_sets]
    order = sorted(scores, key=lambda d: scores[d], reverse=True)
    totals = [0.0 for _ in gain_sets]
    start = 0
    while start < len(order) and start < k:
        end = start + 1
        while end < len(order) and scores[order[end]] == scores[order[start]]:
            end += 1
        weight = sum(discounts[start : min(end, k)])
        for n, gains in enumerate(gain_sets):
            totals[n] += sum(gains.get(d, 0.0) for d in order[start:end]) / (end - start) * weight
        start = end
    return totals


def ndcg_float_at_k(
    scores: Mapping[str, float],
    gains: Mapping[str, float],
    k: int = 10,
    tie_rule: str = DEFAULT_TIE_RULE,
    query_id: str | None = None,
) -> float:
    """nDCG@k of one query's scored pages against its float gains."""
    if k < 1:
        raise UsageError(f"cutoff k={k} must be at least 1", "use e.g. k=10")
    where = f" of query {query_id}" if query_id is not None else ""
    check_gains(gains, where)
    _check_scores(scores, where)
    ideal = idcg_at_k(gains, k)
    if ideal <= 0.0:
        return 0.0
    return dcg_at_k(scores, gains, k, tie_rule) / ideal


def ndcg_float_per_query(
    run: Mapping[str, Mapping[str, float]],
    gains: Mapping[str, Mapping[str, float]],
    k: int = 10,
    tie_rule: str = DEFAULT_TIE_RULE,
    qids: Iterable[str] | None = None,
) -> dict[str, float]:
    """qid -> nDCG@k.

    By default the judged queries are scored (every query of `gains`); a judged query missing
    from the run scores 0 (trec_eval -c), a run query absent from the gains is not scored.
    Given `qids` (e.g. the queries with a positive qrel), exactly those are scored, and one
    without gains scores 0 (its ideal DCG is 0).
    """
    check_tie_rule(tie_rule)
    selected = sorted(gains) if qids is None else list(dict.fromkeys(qids))
    return {
        qid: ndcg_float_at_k(run.get(qid) or {}, gains.get(qid) or {}, k, tie_rule, query_id=qid) for qid in selected
    }


def mean_ndcg_float(
    run: Mapping[str, Mapping[str, float]],
    gains: Mapping[str, Mapping[str, float]],
    k: int = 10,
    tie_rule: str = DEFAULT_TIE_RULE,
    qids: Iterable[str] | None = None,
) -> float:
    """Macro mean over the scored queries (see `ndcg_float_per_query`); 0.0 when none is scored."""
    values = ndcg_float_per_query(run, gains, k, tie_rule, qids)
    return running_mean(values.values()) if values else 0.0


# -- the measure family (`ndcg_float_at_10` in `evaluate`, result files and reports) -------------------

_FORM = re.compile(r"ndcg_float_at_(\d+)")
GAINS_LAYOUT = "`qid 0 docid gain`"


def _compute(measures: list, data) -> dict[str, dict[str, float]]:
    """Every requested cutoff for every scored query, ranked by the protocol's tie rule on the scores as given."""
    if data.gains is None:
        raise UsageError("ndcg_float_at_k needs float gains", "pass --gains FILE (TREC qrels layout, float 4th column)")
    tie_rule = data.protocol.tie_rule
    if data.protocol.max_results is not None or data.protocol.judged_only:
        raise UsageError(
            "-M / -J do not apply to float-gain measures (ndcg_float_at_k): their ranking keeps every scored page",
            "drop -M / -J, or score ndcg_float_at_k in a separate call",
        )
    return {
        qid: {
            m.name: ndcg_float_at_k(data.run.get(qid) or {}, data.gains.get(qid) or {}, m.cutoff, tie_rule, qid)
            for m in measures
        }
        for qid in data.qids
    }


def _parse(text: str):
    from ..protocol import Measure

    match = _FORM.fullmatch(text)
    if not match or int(match.group(1)) < 1:
        return None
    k = int(match.group(1))
    return Measure(f"ndcg_float_at_{k}", f"ndcg_float_cut_{k}", _compute, cutoff=k)


def read_trec_gains(path) -> dict[str, dict[str, float]]:
    """Float gains in TREC qrels layout (`q1 0 doc7 0.8970193041430923`); one line per query and page."""
    from ..trec_io.read import iter_columns

    gains: dict[str, dict[str, float]] = {}
    for number, (qid, _iteration, docid, text) in iter_columns(path, 4, "gains", GAINS_LAYOUT):
        where = f"{path}:{number}"
        try:
            value = float(text)
        except ValueError:
            raise DataError(f"{where}: gain '{text}' is not a number", f"gains lines are {GAINS_LAYOUT}") from None
        if not (math.isfinite(value) and value >= 0):
            raise DataError(f"{where}: gain {text} is not a finite number >= 0", "gains are probabilities in [0, 1]")
        docs = gains.setdefault(qid, {})
        if docid in docs:
            raise DataError(f"{where}: page {docid} has two gains for query {qid}", "keep one line per query and page")
        docs[docid] = value
    return gains


def _register():
    from ..protocol import FAMILIES, Family, register

    if not any(f.name == "ndcg_float" for f in FAMILIES):
        register(Family("ndcg_float", ("ndcg_float_at_{k}",), _parse))


_register()

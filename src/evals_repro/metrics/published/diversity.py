"""Diversity measures over subtopic (nugget, intent) qrels, computed by ndeval through pyndeval.

Subtopic qrels are `{qid: {subtopic: {doc: grade}}}` (ndeval's text layout is `qid subtopic doc
grade`); a document is relevant to a subtopic when its grade reaches `relevance_level`.
ndeval's defaults hold: alpha = 0.5 (the redundancy penalty of alpha-nDCG) and beta = 0.5;
ndeval evaluates at most 20 ranks, so k is 1..20.

- `alpha_ndcg_at_k` (ndeval `alpha-nDCG@k`), `alpha_dcg_at_k` (`alpha-DCG@k`)
- `err_ia_at_k` (`ERR-IA@k`, intent-aware expected reciprocal rank), `nerr_ia_at_k` (`nERR-IA@k`)
- `p_ia_at_k` (`P-IA@k`), `strec_at_k` (`strec@k`, subtopic recall)
- `nrbp`, `nnrbp` (novelty- and rank-biased precision), `map_ia` (`MAP-IA`)

Rankings follow the harness's trec_eval order (score descending as float32 by default, ties by
doc id descending), not pyndeval's own (doc id ascending): pyndeval receives the ranks. Every
judged query (a key of the subtopic qrels) is scored; one missing from the run, or without any
relevant document, scores 0 (ndeval gives NaN for nNRBP there).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from ...base.errors import DataError, UsageError
from ..protocol import EvalData, Family, Measure, PerQuery, register
from ..ranking import check_scores, ranked_docs

SubtopicQrels = Mapping[str, Mapping[str, Mapping[str, int]]]

MAX_DEPTH = 20
DEFAULT_ALPHA = 0.5
DEFAULT_BETA = 0.5
SUBTOPIC_QRELS_LAYOUT = "`qid subtopic docid relevance`"

# our prefix -> ndeval's measure name; cut measures take `_at_{k}`.
CUT = {
    "alpha_ndcg": "alpha-nDCG",
    "alpha_dcg": "alpha-DCG",
    "err_ia": "ERR-IA",
    "nerr_ia": "nERR-IA",
    "p_ia": "P-IA",
    "strec": "strec",
}
UNCUT = {"nrbp": "NRBP", "nnrbp": "nNRBP", "map_ia": "MAP-IA"}


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_DEPTH:
        raise UsageError(f"diversity cutoff k={k} is out of range", f"ndeval evaluates ranks 1..{MAX_DEPTH}; use k=10")
    return k


def diversity_per_query(
    subtopic_qrels: SubtopicQrels,
    run: Mapping[str, Mapping[str, float]],
    measures: Iterable[str],
    *,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    relevance_level: int = 1,
    score_precision: str = "float32",
    max_results: int | None = None,
    judged_only: bool = False,
    qids: Iterable[str] | None = None,
) -> dict[str, dict[str, float]]:
    """`{qid: {ndeval measure: value}}` for ndeval names such as `alpha-nDCG@10`, `ERR-IA@20`, `NRBP`.

    Scored queries: `qids` when given, else every query of `subtopic_qrels`.
    """
    import pyndeval

    names = list(dict.fromkeys(measures))
    for name in names:
        base, _, cut = name.partition("@")
        if base not in set(CUT.values()) | set(UNCUT.values()) or (base in UNCUT.values()) == bool(cut):
            raise UsageError(f"unknown ndeval measure '{name}'", "e.g. alpha-nDCG@10, ERR-IA@20, NRBP")
        if cut:
            _check_k(int(cut))
    if not (0.0 <= alpha <= 1.0 and 0.0 <= beta <= 1.0):
        raise UsageError(f"alpha {alpha} / beta {beta} must lie in [0, 1]", "ndeval's defaults are 0.5 and 0.5")
    selected = sorted(subtopic_qrels) if qids is None else list(dict.fromkeys(qids))
    depth = MAX_DEPTH if max_results is None else min(MAX_DEPTH, max_results)
    lines: list[tuple[str, str, str, int]] = []
    ranked_lines: list[tuple[str, str, float]] = []
    for qid in selected:
        judged: dict[str, int] = {}
        for subtopic, docs in (subtopic_qrels.get(qid) or {}).items():
            for doc, grade in docs.items():
                lines.append((qid, str(subtopic), doc, int(grade)))
                judged[doc] = max(judged.get(doc, grade), grade)
        scores = run.get(qid) or {}
        check_scores(qid, scores)
        order = ranked_docs(scores, score_precision, None if judged_only else depth)
        if judged_only:
            order = [doc for doc in order if doc in judged and judged[doc] >= 0][:depth]
        # pyndeval ranks by score descending, then doc id ascending: give it the ranks as scores.
        ranked_lines.extend((qid, doc, float(len(order) - i)) for i, doc in enumerate(order))
    zero = dict.fromkeys(names, 0.0)
    results = {qid: dict(zero) for qid in selected}
    if lines and ranked_lines:
        evaluator = pyndeval.RelevanceEvaluator(lines, names, relevance_level=relevance_level, alpha=alpha, beta=beta)
        for qid, values in evaluator.evaluate(ranked_lines).items():
            if qid in results:
                results[qid] = {name: (0.0 if math.isnan(values[name]) else float(values[name])) for name in names}
    return results


def _one(name: str, subtopic_qrels: SubtopicQrels, run, **options) -> dict[str, float]:
    return {qid: values[name] for qid, values in diversity_per_query(subtopic_qrels, run, [name], **options).items()}


def alpha_ndcg_at_k(
    subtopic_qrels: SubtopicQrels, run: Mapping[str, Mapping[str, float]], k: int = 10, **options
) -> dict[str, float]:
    """qid -> alpha-nDCG@k (alpha = 0.5 unless `alpha=` is given); options as `diversity_per_query`."""
    return _one(f"alpha-nDCG@{_check_k(k)}", subtopic_qrels, run, **options)


def err_ia_at_k(
    subtopic_qrels: SubtopicQrels, run: Mapping[str, Mapping[str, float]], k: int = 20, **options
) -> dict[str, float]:
    """qid -> ERR-IA@k (intent-aware expected reciprocal rank, not normalised; nERR-IA is `nerr_ia_at_k`)."""
    return _one(f"ERR-IA@{_check_k(k)}", subtopic_qrels, run, **options)


def qrels_from_subtopics(subtopic_qrels: SubtopicQrels) -> dict[str, dict[str, int]]:
    """Flat qrels (`{qid: {doc: grade}}`, a document's best grade over subtopics) for the other measures."""
    flat: dict[str, dict[str, int]] = {}
    for qid, subtopics in subtopic_qrels.items():
        docs = flat.setdefault(qid, {})
        for judged in subtopics.values():
            for doc, grade in judged.items():
                docs[doc] = max(docs.get(doc, grade), grade)
    return flat


def read_subtopic_qrels(path) -> dict[str, dict[str, dict[str, int]]]:
    """ndeval qrels (`qid subtopic docid relevance`; `#` comments and blank lines skipped)."""
    from ..trec_io.read import iter_columns

    qrels: dict[str, dict[str, dict[str, int]]] = {}
    for number, (qid, subtopic, docid, text) in iter_columns(path, 4, "subtopic qrels", SUBTOPIC_QRELS_LAYOUT):
        try:
            grade = int(text)
        except ValueError:
            raise DataError(
                f"{path}:{number}: relevance '{text}' is not an integer",
                f"subtopic qrels lines are {SUBTOPIC_QRELS_LAYOUT}",
            ) from None
        docs = qrels.setdefault(qid, {}).setdefault(subtopic, {})
        if docid in docs:
            raise DataError(
                f"{path}:{number}: document {docid} is judged twice for query {qid} subtopic {subtopic}",
                "keep one line per query, subtopic and document",
            )
        docs[docid] = grade
    return qrels


# -- the measure family ------------------------------------------------------------------------------


def _compute(measures: list[Measure], data: EvalData) -> PerQuery:
    if data.subtopics is None:
        raise UsageError(
            f"{measures[0].name} needs subtopic qrels",
            f"pass --subtopic-qrels FILE ({SUBTOPIC_QRELS_LAYOUT}) or subtopics= to evaluate()",
        )
    protocol = data.protocol
    by_ndeval = {m.trec_name: m.name for m in measures}
    values = diversity_per_query(
        data.subtopics,
        data.run,
        list(by_ndeval),
        relevance_level=protocol.relevance_level,
        score_precision=protocol.score_precision,
        max_results=protocol.max_results,
        judged_only=protocol.judged_only,
        qids=data.qids,
    )
    return {qid: {by_ndeval[n]: v for n, v in row.items()} for qid, row in values.items()}


_CUT_FORM = re.compile(rf"({'|'.join(CUT)})_at_([1-9][0-9]*)")


def _parse(text: str) -> Measure | None:
    if text in UNCUT:
        return Measure(text, UNCUT[text], _compute)
    match = _CUT_FORM.fullmatch(text)
    if match is None:
        return None
    prefix, k = match.group(1), int(match.group(2))
    if k > MAX_DEPTH:
        raise UsageError(f"{text}: ndeval evaluates at most {MAX_DEPTH} ranks", f"use {prefix}_at_{MAX_DEPTH} or less")
    return Measure(text, f"{CUT[prefix]}@{k}", _compute, cutoff=k)


FAMILY = register(Family("diversity", tuple(f"{p}_at_{{k}}" for p in CUT) + tuple(UNCUT), _parse))

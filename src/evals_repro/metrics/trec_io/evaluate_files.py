"""What `evals-repro evaluate` does, callable from tests: read the files, score, format like trec_eval."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocol import DEFAULT_MEASURES, ScoringProtocol, split_measure_list


@dataclass
class Outcome:
    lines: list[str]
    warnings: list[str] = field(default_factory=list)
    protocol: ScoringProtocol | None = None


def trec_spelled(items: Sequence[str]) -> bool:
    """Is every measure item written the trec_eval way (`P.5`, `ndcg_cut_10`, `all_trec`, `map`)?"""
    from ..trec.names import parse_trec

    specs = [spec for item in items for spec in split_measure_list(item)]
    return bool(specs) and all(parse_trec(spec) is not None for spec in specs)


def trec_order(names: Sequence[str]) -> list[str]:
    """trec_eval's print order: its measure table's order, parameters ascending within a measure."""
    from ..protocol import get_measure
    from ..trec.table import ORDER, TrecMeasure

    def key(item: tuple[int, str]) -> tuple[int, float, int]:
        index, name = item
        m = get_measure(name)
        if not isinstance(m, TrecMeasure) or m.rr_cut is not None:
            return (len(ORDER), 0.0, index)
        numeric = m.cutoff is not None or m.base in ("iprec_at_recall", "Rprec_mult")
        param = float(m.param or 0) if numeric else 0.0
        return (ORDER[m.base], param, index)

    return [name for _, name in sorted(enumerate(names), key=key)]


def evaluate_files(
    *,
    qrels: Path | None,
    run: str | Path,
    measures: Sequence[str] | None = None,
    per_query: bool = False,
    trec_names: bool | None = None,
    summary: bool = True,
    gains: Path | None = None,
    subtopic_qrels: Path | None = None,
    protocol_options: Mapping[str, Any] | None = None,
) -> Outcome:
    """Score `run` against `qrels` (and float gains / subtopic qrels) and print it like trec_eval.

    `trec_names=None` prints trec_eval's names when every measure was given in trec_eval's
    spelling, ours otherwise.
    """
    from ..evaluate import evaluate
    from ..published.diversity import qrels_from_subtopics, read_subtopic_qrels
    from ..published.ndcg_float import read_trec_gains
    from ..trec.names import trec_eval_measure_args
    from ..trec.text import relstrings
    from .read import read_trec_qrels, read_trec_run_and_tag
    from .write import trec_eval_lines

    names = trec_eval_measure_args(list(measures)) if measures else list(DEFAULT_MEASURES)
    float_gains = read_trec_gains(gains) if gains else None
    if float_gains is not None and not any(m.startswith("ndcg_float_at_") for m in names):
        names.append("ndcg_float_at_10")
    subtopics = read_subtopic_qrels(subtopic_qrels) if subtopic_qrels else None
    diversity = ("alpha_", "err_ia_", "nerr_ia_", "p_ia_", "strec_", "nrbp", "nnrbp", "map_ia")
    if subtopics is not None and not any(m.startswith(diversity) for m in names):
        names.append("alpha_ndcg_at_10")
    protocol = ScoringProtocol.from_options(names, protocol_options)
    if qrels is not None:
        judgments = read_trec_qrels(qrels)
    else:
        assert subtopics is not None
        judgments = qrels_from_subtopics(subtopics)
    ranking, run_id = read_trec_run_and_tag(run)
    per_query_scores = evaluate(judgments, ranking, protocol, gains=float_gains, subtopics=subtopics)
    warnings = []
    judged = sorted(qid for qid, docs in judgments.items() if docs)
    missing = [qid for qid in judged if not ranking.get(qid)]
    where = "standard input" if str(run) == "-" else str(run)
    if missing and protocol.complete:
        warnings.append(
            f"{len(missing)} of {len(judged)} judged queries have no results in {where} "
            f"and score 0 (first: {', '.join(missing[:5])})"
        )
    elif missing:
        warnings.append(
            f"{len(missing)} of {len(judged)} judged queries have no results in {where} "
            f"and are skipped (--no-complete; first: {', '.join(missing[:5])})"
        )
    level = protocol.relevance_level
    if not any(grade >= level for qid in judged for grade in judgments[qid].values()):
        warnings.append(
            f"no judged query has a relevant document (grade >= {level}) in {qrels or subtopic_qrels}; "
            "every measure is 0"
        )
    spelled = trec_spelled(measures or [])
    use_trec_names = spelled if trec_names is None else trec_names
    # Asked the trec_eval way, printed the trec_eval way: its measure order, no num_q unless asked.
    shown = trec_order(protocol.measures) if spelled else list(protocol.measures)
    summary_values = {}
    if protocol.complete:  # trec_eval's -c `all` num_rel: grades > 0 over every judged query, -l ignored
        from ..protocol import get_measure
        from ..trec.complete import num_rel_total

        for name in shown:
            if getattr(get_measure(name), "trec_name", "") == "num_rel":
                summary_values[name] = float(num_rel_total(judgments, per_query_scores))
    lines = trec_eval_lines(
        per_query_scores,
        shown,
        per_query_lines=per_query,
        trec_names=use_trec_names,
        always_num_q=not spelled,
        summary=summary,
        run_id=run_id,
        texts=relstrings(judgments, ranking, protocol) if per_query else None,
        summary_values=summary_values,
    )
    return Outcome(lines=lines, warnings=warnings, protocol=protocol)

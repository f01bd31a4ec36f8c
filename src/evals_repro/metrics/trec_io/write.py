"""trec_eval's text output: `measure<TAB>qid<TAB>value`, the name padded to 22 characters.

Values print with 4 decimals, counts (num_q, num_ret, ...) as integers, `relstring` quoted per
query and `runid` once for `all`, as trec_eval prints them. With `trec_names` the lines carry
trec_eval's measure names, so our output diffs cleanly against `trec_eval -c [-q]`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..evaluate import aggregate
from ..protocol import Measure, get_measure


def _line(name: str, qid: str, value: str) -> str:
    return f"{name:<22s}\t{qid}\t{value}"


def _value(measure: Measure, value: float) -> str:
    if math.isnan(value):
        return "  -nan"  # C's printf("%6.4f") of the 0/0 NaN trec_eval computes (sign bit set on x86-64)
    return str(int(value)) if measure.integer else f"{value:6.4f}"


def trec_eval_lines(
    per_query: Mapping[str, Mapping[str, float]],
    measures: Sequence[str],
    *,
    per_query_lines: bool = False,
    trec_names: bool = False,
    summary: bool = True,
    run_id: str | None = None,
    texts: Mapping[str, Mapping[str, str]] | None = None,
    always_num_q: bool = True,
    summary_values: Mapping[str, float] | None = None,
) -> list[str]:
    """Per-query lines (qid ascending) when asked, then the `all` lines (unless `summary` is off).

    `num_q` is printed where it is listed, or first when it is not (unless `always_num_q` is off,
    as trec_eval does). `texts` holds the relstring
    values (`{name: {qid: string}}`), `run_id` the runid line's value. `summary_values` replaces
    the `all` value of the measures it names (trec_eval's -c num_rel, complete.num_rel_total).
    """
    resolved = [get_measure(name) for name in measures]
    shown = {m.name: (m.trec_name if trec_names else m.name) for m in resolved}
    texts = texts or {}
    lines: list[str] = []
    if per_query_lines:
        for qid in sorted(per_query):
            row = per_query[qid]
            for m in resolved:
                if m.text:
                    if m.name in texts and qid in texts[m.name]:
                        lines.append(_line(shown[m.name], qid, f"'{texts[m.name][qid]}'"))
                elif m.per_query_line:
                    lines.append(_line(shown[m.name], qid, _value(m, row[m.name])))
    if not summary:
        return lines
    qids = list(per_query)
    if "num_q" not in shown and always_num_q:
        lines.append(_line("num_q", "all", str(len(qids))))
    for m in resolved:
        if m.text:
            if m.trec_name == "runid" and run_id is not None:
                lines.append(_line(shown[m.name], "all", run_id))
            continue
        if summary_values and m.name in summary_values:
            value = summary_values[m.name]
        else:
            value = aggregate(m.name, [per_query[qid][m.name] for qid in qids]) if qids else 0.0
        lines.append(_line(shown[m.name], "all", _value(m, value)))
    return lines

"""trec_eval's two text measures, printed by `trec_eval_lines` and never averaged.

- `runid`: the run's tag (the sixth column of the run's last line, as trec_eval reads it),
  printed once for `all`.
- `relstring.N` (default 10): per query, one character per document of the first N ranks: the
  grade 0-9, `>` above 9, `-` not judged, `.` judged with a negative grade.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..protocol import EvalData, Measure, PerQuery, ScoringProtocol
from .complete import absent
from .rels import NONPOOL, UNJUDGED, ranked


def compute(measures: list[Measure], data: EvalData) -> PerQuery:
    """Text measures carry no number: `evaluate` never asks for them."""
    return {qid: {} for qid in data.qids}


def _char(rel: int) -> str:
    if rel > 9:
        return ">"
    if rel >= 0:
        return str(rel)
    return {NONPOOL: "-", UNJUDGED: "."}.get(rel, "<")


def relstring(data: EvalData, qid: str, length: int = 10, trec_name: str = "relstring") -> str:
    """The relstring of one query. A query without results (-c) reads trec_eval 10's stand-in
    (complete.py): '' under the name `relstring`, `-` under a parameterised one (`relstring_5`)."""
    if trec_name == "relstring" and absent(data, qid):
        return ""
    return "".join(_char(rel) for rel in ranked(data, qid).rels[: max(length, 0)])


def relstrings(
    qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]], protocol: ScoringProtocol
) -> dict[str, dict[str, str]]:
    """`{relstring measure name: {qid: string}}` for the relstring measures of `protocol`."""
    from ..evaluate import prepare
    from ..protocol import expand_measure

    wanted = [m for name in protocol.measures for m in expand_measure(name) if m.text and m.trec_name != "runid"]
    if not wanted:
        return {}
    data = prepare(qrels, run, protocol)
    return {
        m.name: {
            qid: relstring(data, qid, int(float(getattr(m, "param", None) or 10)), m.trec_name) for qid in data.qids
        }
        for m in wanted
    }

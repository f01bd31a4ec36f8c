"""trec_eval's measure table: every measure the harness offers under trec_eval's name.

One table (`BASES`) describes every trec_eval measure the harness offers: its parameters
(none, long cutoffs `P.5,10`, double cutoffs `Rprec_mult.0.2,0.5`, a parameter string
`utility.2,-1,0,0` or gain pairs `ndcg.1=3,2=9`), its defaults, how `all` aggregates it, our
name for it where we have one (`P_5` is `p_at_5`, `recip_rank` is `mrr`) and who computes it:
pytrec_eval, or a module of ours where pytrec_eval lacks the measure or trec_eval 10 changed it.

Spellings accepted (as trec_eval's `-m`): `base`, `base.params`, the printed `base_params`,
and the nicknames `official`, `set`, `all_trec`, expanded in trec_eval's print order.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol import Measure

STANDARD_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RECALL_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
RPREC_MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)


@dataclass(frozen=True)
class TrecMeasure(Measure):
    """A trec_eval measure: `base` (`P`), `param` (this measure's parameter text, None for the
    default), `key` (pytrec_eval's result key), `rr_cut` (mrr_at_k: recip_rank kept only when the
    first relevant document is within rank k)."""

    base: str = ""
    param: str | None = None
    key: str = ""
    rr_cut: int | None = None


@dataclass(frozen=True)
class Base:
    """One trec_eval measure family. `params`: none | long | double | text | pairs."""

    name: str
    params: str = "none"
    defaults: tuple = ()
    ours: str | None = None  # our name, "{k}" filled for long cutoffs
    backend: str = "pytrec"  # pytrec | own module name | text
    aggregate: str = "mean"
    integer: bool = False
    per_query_line: bool = True
    key: str | None = None  # pytrec_eval key when it differs from the name (gm_map reads map)


BASES: dict[str, Base] = {
    b.name: b
    for b in (
        Base("runid", backend="text", per_query_line=False),
        Base("num_q", backend="counts", aggregate="sum", integer=True, per_query_line=False),
        Base("num_ret", aggregate="sum", integer=True),
        Base("num_rel", aggregate="sum", integer=True),
        Base("num_rel_ret", aggregate="sum", integer=True),
        Base("map"),
        Base("gm_map", aggregate="gmean", per_query_line=False, key="map"),
        Base("Rprec"),
        Base("bpref"),
        Base("recip_rank", ours="mrr"),
        Base("iprec_at_recall", "double", RECALL_POINTS, backend="iprec"),
        Base("P", "long", STANDARD_CUTOFFS, ours="p_at_{k}"),
        Base("relstring", "text", ("10",), backend="text"),
        Base("recall", "long", STANDARD_CUTOFFS, ours="recall_at_{k}"),
        Base("infAP"),
        Base("gm_bpref", aggregate="gmean", per_query_line=False, key="bpref"),
        Base("Rprec_mult", "double", RPREC_MULTS),
        Base("utility", "text"),
        Base("11pt_avg", "text", backend="iprec"),
        Base("binG"),  # no parameters in trec_eval (it ignores any given)
        Base("G", "pairs"),
        Base("dcg", "pairs", backend="dcg"),
        Base("ideal_dcg", "pairs", backend="dcg"),
        Base("ndcg", "pairs", ours="ndcg"),
        Base("ndcg_rel", "pairs"),
        Base("Rndcg", "pairs"),
        Base("ndcg_cut", "long", STANDARD_CUTOFFS, ours="ndcg_at_{k}"),
        Base("map_cut", "long", STANDARD_CUTOFFS, ours="map_at_{k}"),
        Base("relative_P", "long", STANDARD_CUTOFFS),
        Base("success", "long", (1, 5, 10), ours="success_at_{k}"),
        Base("set_P"),
        Base("set_relative_P"),
        Base("set_recall"),
        Base("set_map"),
        Base("set_F", "text"),
        Base("num_nonrel_judged_ret", aggregate="sum", integer=True),
        Base("yaap", backend="dcg"),
        Base("rbp", "pairs", backend="rbp"),
        Base("rbp_resid", "pairs", backend="rbp"),
        Base("unj", "long", (5, 10, 20), backend="judged"),
    )
}
# Mean measures with no better side: a property of the judgments (ideal_dcg), or of how much of the ranking was
# judged (unj) or left unresolved (rbp_resid); counts (aggregate "sum") have none either.
NO_BETTER_SIDE = ("ideal_dcg", "rbp_resid", "unj")
ORDER = {name: i for i, name in enumerate(BASES)}  # trec_eval's print order (measures.c)
NOT_IN_ALL_TREC = ("dcg", "ideal_dcg", "yaap")  # offered by trec_eval 10 under -m only

NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": (
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "map",
        "gm_map",
        "Rprec",
        "bpref",
        "recip_rank",
        "iprec_at_recall",
        "P",
    ),
    "set": (
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "utility",
        "set_P",
        "set_recall",
        "set_relative_P",
        "set_map",
        "set_F",
    ),
    "all_trec": tuple(name for name in BASES if name not in NOT_IN_ALL_TREC),
}

LOWER_NAMES = {name.lower(): name for name in BASES}

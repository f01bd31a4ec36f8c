"""trec_eval's measures under trec_eval's own names and parameter syntax.

One table (`BASES`) describes every trec_eval measure the harness offers: its parameters
(none, long cutoffs `P.5,10`, double cutoffs `Rprec_mult.0.2,0.5`, a parameter string
`utility.2,-1,0,0` or gain pairs `ndcg.1=3,2=9`), its defaults, how `all` aggregates it, our
name for it where we have one (`P_5` is `p_at_5`, `recip_rank` is `mrr`) and who computes it:
pytrec_eval, or a module of ours where pytrec_eval lacks the measure or trec_eval 10 changed it.

Spellings accepted (as trec_eval's `-m`): `base`, `base.params`, the printed `base_params`,
and the nicknames `official`, `set`, `all_trec`, expanded in trec_eval's print order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from .base import EvalData, Family, Measure, PerQuery

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

_LOWER = {name.lower(): name for name in BASES}


def _long_params(text: str) -> list[int] | None:
    """trec_eval reads long cutoffs with atol (`23.4` is 23); each must be > 0."""
    values = []
    for part in text.split(","):
        match = re.match(r"\s*[+-]?\d+", part)
        if match is None or int(match.group()) <= 0:
            return None
        values.append(int(match.group()))
    return sorted(set(values))


def _double_params(text: str) -> list[float] | None:
    try:
        return sorted({float(part) for part in text.split(",")})
    except ValueError:
        return None


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _valid_text(base: Base, text: str) -> bool:
    """A parameter string trec_eval would read: numbers (`2,-1,0,0`), or `name=number` pairs (`1=3,p=0.95`)."""
    parts = text.split(",") if text else []
    if base.params == "pairs":
        return bool(parts) and all(
            len(pair := part.split("=")) == 2 and pair[0] != "" and _is_number(pair[1]) for part in parts
        )
    return bool(parts) and all(_is_number(part) for part in parts)


def _compute_for(base: Base) -> Callable[[list[Measure], EvalData], PerQuery]:
    from . import counts, dcg, iprec, judged, pytrec, rbp, text

    return {
        "pytrec": pytrec.compute,
        "counts": counts.compute,
        "dcg": dcg.compute,
        "iprec": iprec.compute,
        "rbp": rbp.compute,
        "judged": judged.compute_unj,
        "text": text.compute,
    }[base.backend]


def make(base_name: str, param: str | None = None, *, name: str | None = None, **extra) -> TrecMeasure:
    """The measure `base_name` with one parameter (a cutoff, or the whole parameter text)."""
    base = BASES[base_name]
    cutoff = None
    if base.params == "long":
        assert param is not None
        cutoff = int(param)
        trec_name = f"{base.name}_{cutoff}"
        ours = base.ours.format(k=cutoff) if base.ours else trec_name
    elif base.params == "double":
        assert param is not None
        trec_name = f"{base.name}_{float(param):3.2f}"
        ours = trec_name
    else:
        trec_name = base.name if param is None else f"{base.name}_{param}"
        ours = base.ours if base.ours and param is None else trec_name
    key = base.key or (trec_name if base.params in ("long", "double") else base.name)
    return TrecMeasure(
        name=name or ours,
        trec_name=extra.pop("trec_name", trec_name),
        compute=_compute_for(base),
        cutoff=extra.pop("cutoff", cutoff),
        aggregate=base.aggregate,
        integer=base.integer,
        per_query_line=base.per_query_line,
        text=base.backend == "text",
        base=base.name,
        param=param,
        key=key,
        **extra,
    )


def expand_base(base_name: str, params: str | None = None) -> list[Measure] | None:
    """Every measure `base[.params]` names, as trec_eval's `-m` reads it; None if params are invalid."""
    base = BASES[base_name]
    if base.params == "long":
        values = base.defaults if params is None else _long_params(params)
        return None if not values else [make(base.name, str(v)) for v in values]
    if base.params == "double":
        doubles = base.defaults if params is None else _double_params(params)
        return None if not doubles else [make(base.name, repr(float(v))) for v in doubles]
    if params is None:
        return [make(base.name)]
    if base.params == "none" or not _valid_text(base, params):
        return None
    return [make(base.name, params)]


def parse_trec(text: str) -> list[Measure] | None:
    """A trec_eval spelling: nickname, `base`, `base.params` or `base_params` (case-insensitive fallback)."""
    if text in NICKNAMES:
        return [m for base in NICKNAMES[text] for m in expand_base(base) or []]
    if text in BASES:
        return expand_base(text)
    name, dot, params = text.partition(".")
    base = BASES.get(name) or BASES.get(_LOWER.get(name.lower(), "")) if dot else None
    if base is not None:
        return expand_base(base.name, params)
    if text.lower() in _LOWER:
        return expand_base(_LOWER[text.lower()])
    # The printed form `base_params` (P_5, ndcg_cut_10, utility_2,-1,0,0): the longest base that fits.
    for base_name in sorted(BASES, key=len, reverse=True):
        for candidate in (base_name, base_name.lower()):
            if (text if candidate == base_name else text.lower()).startswith(candidate + "_"):
                found = expand_base(base_name, text[len(candidate) + 1 :])
                if found is not None:
                    return found
    return None


# Registered last (metrics/__init__.py), so its form closes the list of valid forms in errors.
FAMILY = Family("trec_eval", ("trec_eval names (P.5,10, ndcg_cut.10, Rprec, all_trec, official)",), parse_trec)


def our_family(name: str, prefix: str, base_name: str, uncut: str | None = None) -> Family:
    """Our `<prefix>_at_{k}` names for the trec_eval measure `base_name` (and `<prefix>` for `uncut`)."""
    pattern = re.compile(rf"{re.escape(prefix)}_at_([1-9][0-9]*)")

    def parse(text: str) -> Measure | None:
        if uncut is not None and text == prefix:
            return make(uncut)
        match = pattern.fullmatch(text)
        return make(base_name, match.group(1)) if match else None

    forms = (f"{prefix}_at_{{k}}",) + ((prefix,) if uncut is not None else ())
    return Family(name, forms, parse)

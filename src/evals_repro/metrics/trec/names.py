"""trec_eval's `-m` spellings read into measures, and our `<name>_at_{k}` names for its measures.

Spellings accepted (as trec_eval's `-m`): `base`, `base.params`, the printed `base_params`,
and the nicknames `official`, `set`, `all_trec`, expanded in trec_eval's print order. Each
measure is computed by pytrec_eval or by the module of ours its table row names (table.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from ..protocol import EvalData, Family, Measure, PerQuery, expand_measure, parse_measures, split_measure_list
from . import dcg, iprec, judged, pytrec, rbp, text
from .table import BASES, LOWER_NAMES, NICKNAMES, NO_BETTER_SIDE, Base, TrecMeasure


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


def count_queries(measures: list[Measure], data: EvalData) -> PerQuery:
    """`num_q`: each scored query counts 1; its `all` value is the number of queries (trec_eval prints it
    only as a summary). The other counts (num_ret, num_rel, ...) come from pytrec_eval."""
    return {qid: {m.name: 1.0 for m in measures} for qid in data.qids}


def _compute_for(base: Base) -> Callable[[list[Measure], EvalData], PerQuery]:
    return {
        "pytrec": pytrec.compute,
        "counts": count_queries,
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
        higher_is_better=base.aggregate != "sum" and base.name not in NO_BETTER_SIDE,
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
    base = BASES.get(name) or BASES.get(LOWER_NAMES.get(name.lower(), "")) if dot else None
    if base is not None:
        return expand_base(base.name, params)
    if text.lower() in LOWER_NAMES:
        return expand_base(LOWER_NAMES[text.lower()])
    # The printed form `base_params` (P_5, ndcg_cut_10, utility_2,-1,0,0): the longest base that fits.
    for base_name in sorted(BASES, key=len, reverse=True):
        for candidate in (base_name, base_name.lower()):
            if (text if candidate == base_name else text.lower()).startswith(candidate + "_"):
                found = expand_base(base_name, text[len(candidate) + 1 :])
                if found is not None:
                    return found
    return None


def _base_named(name: str) -> Base | None:
    return BASES.get(name) or BASES.get(LOWER_NAMES.get(name.lower(), ""))


def trec_eval_measure_args(items: list[str] | tuple[str, ...]) -> list[str]:
    """Canonical names for `-m` arguments read as trec_eval reads them: a measure is computed once, with the
    parameters of the first `base.params` naming it (meas_init.c stops at the first match), so
    `-m all_trec -m P.5` gives P_5 alone and `-m all_trec -m relstring.3` relstring_3 alone. Spellings that
    are not trec_eval's (`p_at_10`, `P_10`) are added as `parse_measures` adds them."""
    specs = [spec for item in items for spec in split_measure_list(str(item))]
    chosen: dict[str, list[Measure]] = {}
    for spec in specs:
        name, dot, params = spec.partition(".")
        base = _base_named(name) if dot else None
        if base is not None and base.name not in chosen:
            found = expand_base(base.name, params)
            if found:
                chosen[base.name] = found
    if not chosen:
        return parse_measures(list(items))
    seen: dict[str, None] = {}
    for spec in specs:
        spelled = parse_trec(spec) if "." in spec or spec in NICKNAMES or _base_named(spec) else None
        for measure in spelled if spelled is not None else expand_measure(spec):
            if spelled is not None and isinstance(measure, TrecMeasure) and measure.base in chosen:
                seen.update(dict.fromkeys(m.name for m in chosen[measure.base]))
            else:
                seen.setdefault(measure.name, None)
    return list(seen)


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

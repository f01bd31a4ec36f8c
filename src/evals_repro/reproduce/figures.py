"""The published figures, as data: one declaration per source under `published/` (TOML, the card's tables as TSV).

Each figure carries its value as printed, its unit and printed precision (the tolerance is half a unit of the last
printed digit), where the source prints it, what it is a figure of (measure, view, tie rule, data revision) and the
command that recomputes it. Nothing here computes: the sources' modules do (`rcp_card`, `rerun`, `results`).
Loading reads only TOML and TSV, so a refusal (an unknown source) stays fast.
"""

from __future__ import annotations

import csv
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.errors import DataError, UsageError, choices

# The declarations' folder; tests point it at a fixture release's figures.
PUBLISHED_DIR = Path(__file__).with_name("published")

VIEWS = ("native", "mean6")
METRICS = ("rcp_ndcg_at_10", "qrel_ndcg_at_10")
RULES = ("doc-id", "group-mean")
VIEW_TITLES = {"native": "native-language view", "mean6": "6-language mean view"}
METRIC_TITLES = {"rcp_ndcg_at_10": "RCP-nDCG@10", "qrel_ndcg_at_10": "qrel-nDCG@10"}
RULE_TITLES = {"doc-id": "rule (a)", "group-mean": "rule (b)"}
RELATIONS = ("=", "<", "range")
# How a figure is recomputed: the replayed tables, a claim computed from the release, a claim derived from the
# replayed tables, our own runs of a card model, a result record of ours; "none": nothing here computes it.
ROUTES = ("replay", "release", "derived", "rerun", "results", "none")


@dataclass(frozen=True)
class Figure:
    source: str
    id: str
    section: str
    label: str
    value: float
    unit: str = ""
    decimals: int = 0
    relation: str = "="
    high: float | None = None  # a range's upper end
    where: str = ""
    statement: str = ""
    reading: str = ""  # how an ambiguous sentence is read here
    command: str = ""
    route: str = "none"
    benchmark: str | None = None
    measure: str | None = None
    view: str | None = None
    tie_rule: str | None = None
    revision: str | None = None
    subset: str | None = None
    method: str | None = None
    needs: tuple[str, ...] = ()  # what no run here can supply: the figure cannot run here
    reference: str | None = None  # the settings that differ from ours: shown, never checked
    nearest: str | None = None  # the command that computes the nearest figure here (another population)
    implied: bool = False  # stated in words, not digits ("none", "the same id order")
    from_statement: bool = False  # printed in the claim's statement rather than its figure
    from_printed: bool = False  # derived from the cells as printed (the source's own tables must give it too)

    @property
    def tolerance(self) -> float:
        """Half a unit of the last printed digit."""
        return 0.5 * 10.0 ** (-self.decimals)

    def reproduced(self, here: float) -> bool:
        slack = 1e-9 * max(1.0, abs(self.value))  # float noise in the recomputation, never a printed digit
        if self.relation == "<":
            return here < self.value
        if self.relation == "range":
            assert self.high is not None
            return self.value - self.tolerance - slack <= here <= self.high + self.tolerance + slack
        return abs(here - self.value) <= self.tolerance + slack

    def difference(self, here: float) -> float | None:
        """here minus published (for a range: the distance past its nearer end); None for a bound."""
        if self.relation == "<":
            return None
        if self.relation == "range":
            assert self.high is not None
            return here - self.value if here < self.value else (here - self.high if here > self.high else 0.0)
        return here - self.value

    def published_text(self) -> str:
        if self.relation == "<":
            return f"< {self.value:g}"
        if self.relation == "range":
            return f"{self.value:.{self.decimals}f}-{self.high:.{self.decimals}f}"
        return f"{self.value:.{self.decimals}f}"

    def here_text(self, here: float) -> str:
        if self.relation == "<":
            return f"{here:.1e}"
        if self.decimals == 0 and float(here).is_integer():
            return f"{int(here)}"
        return f"{here:.{self.decimals + 2}f}"

    def difference_text(self, here: float) -> str:
        diff = self.difference(here)
        if diff is None:
            return "" if self.reproduced(here) else f"not < {self.value:g}"
        if self.decimals == 0 and float(diff).is_integer():
            return f"{int(diff):+d}"
        return f"{diff:+.{self.decimals + 2}f}"


@dataclass(frozen=True)
class RerunMethod:
    """A card reranker the harness runs itself: its method, and what a run needs (a key, or a GPU)."""

    reranker: str
    method: str
    key: str | None = None
    gpu: str | None = None  # the local reranker's name (`serve-reranker NAME`)


@dataclass(frozen=True)
class Source:
    name: str
    title: str
    citation: str
    benchmark: str | None
    revision: str | None
    revision_tag: str | None
    figures: tuple[Figure, ...]
    rerun: tuple[RerunMethod, ...] = ()
    path: Path | None = None


def table_id(view: str, metric: str, rule: str, reranker: str, domain: str) -> str:
    return f"{view}/{metric}/{rule}/{reranker}/{domain}"


def rerun_id(method: str, view: str, metric: str, rule: str, domain: str) -> str:
    return f"rerun/{method}/{view}/{metric}/{rule}/{domain}"


def _bad(path: Path, what: str) -> DataError:
    return DataError(f"{path}: {what}", "the published figures ship with the package: reinstall it")


def _number(raw: Any, path: Path, where: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise _bad(path, f"{where}: value {raw!r} is not a finite number")
    return float(raw)


def _claim_figures(path: Path, source: str, claim: dict[str, Any], defaults: dict[str, Any]) -> list[Figure]:
    cid = claim.get("id")
    if not isinstance(cid, str) or not claim.get("figures"):
        raise _bad(path, f"a [[claims]] entry needs an id and figures (got {cid!r})")
    needs = tuple(defaults.get("needs", ())) + tuple(claim.get("needs", ()))
    route = "derived" if claim.get("derived") else ("none" if needs else "release")
    out = []
    for item in claim["figures"]:
        relation = item.get("relation", "=")
        if relation not in RELATIONS:
            raise _bad(path, f"{cid}.{item.get('name')}: relation {relation!r} is not one of {choices(RELATIONS)}")
        out.append(
            Figure(
                source=source,
                id=f"{cid}.{item['name']}",
                section="claims",
                label=item.get("label", item["name"]),
                value=_number(item.get("value"), path, f"{cid}.{item['name']}"),
                unit=item.get("unit", ""),
                decimals=int(item.get("decimals", 0)),
                relation=relation,
                high=None if item.get("high") is None else _number(item["high"], path, f"{cid}.{item['name']}"),
                where=claim.get("where", ""),
                statement=claim.get("statement", ""),
                reading=claim.get("reading", ""),
                command=claim.get("command", ""),
                route=route,
                benchmark=defaults.get("benchmark"),
                revision=defaults.get("revision"),
                needs=needs,
                nearest=claim.get("nearest"),
                implied=bool(item.get("implied", False)),
                from_statement=item.get("from") == "statement",
                from_printed=claim.get("derived") == "printed",
            )
        )
    return out


def _table_figures(path: Path, source: str, decl: dict[str, Any]) -> list[Figure]:
    tables = decl["tables"]
    tsv = path.with_name(tables["file"])
    try:
        with tsv.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
    except OSError as exc:
        raise _bad(tsv, f"not readable ({exc.strerror or exc})") from None
    out = []
    for number, row in enumerate(rows, start=2):
        view, metric, rule = row.get("view"), row.get("metric"), row.get("tie_rule")
        if view not in VIEWS or metric not in METRICS or rule not in RULES or not row.get("reranker"):
            raise _bad(tsv, f"line {number}: view, metric, tie_rule or reranker is not one of the card's")
        try:
            value = float(row["value_percent"])
        except (TypeError, ValueError):
            raise _bad(tsv, f"line {number}: value_percent {row.get('value_percent')!r} is not a number") from None
        domain = row["domain"]
        out.append(
            Figure(
                source=source,
                id=table_id(view, metric, rule, row["reranker"], domain),
                section=f"tables: {METRIC_TITLES[metric]}, {VIEW_TITLES[view]}, {RULE_TITLES[rule]}",
                label=f"{row['reranker']}, {domain}",
                value=value,
                unit=tables.get("unit", "%"),
                decimals=int(tables.get("decimals", 1)),
                where=tables.get("where", ""),
                statement=tables.get("statement", ""),
                command=tables.get("command", ""),
                route="replay",
                benchmark=decl.get("benchmark"),
                measure=metric,
                view=view,
                tie_rule=rule,
                revision=decl.get("revision"),
            )
        )
    return out


def _rerun_figures(source: str, decl: dict[str, Any], tables: list[Figure], methods: list[RerunMethod]) -> list[Figure]:
    rerun = decl.get("rerun", {})
    by_reranker = {m.reranker: m for m in methods}
    out = []
    for fig in tables:
        reranker = fig.label.split(", ")[0]
        if reranker not in by_reranker:
            continue
        method = by_reranker[reranker].method
        assert fig.view and fig.measure and fig.tie_rule
        domain = fig.id.rsplit("/", 1)[1]
        out.append(
            Figure(
                **{
                    **fig.__dict__,
                    "id": rerun_id(method, fig.view, fig.measure, fig.tie_rule, domain),
                    "section": f"re-run {method}: {fig.section.removeprefix('tables: ')}",
                    "label": f"{reranker} as {method}, {domain}",
                    "where": rerun.get("where", fig.where),
                    "statement": rerun.get("statement", fig.statement),
                    "command": f"evals-repro run {method} -b {decl.get('benchmark')}",
                    "route": "rerun",
                    "method": method,
                }
            )
        )
    return out


def _results_figures(path: Path, source: str, decl: dict[str, Any]) -> list[Figure]:
    block = decl["results"]
    subsets = [item["subset"] for item in block["figures"]]
    command = f"evals-repro run {block['method']} -b {decl['benchmark']} -s {','.join(subsets)}"
    return [
        Figure(
            source=source,
            id=f"{decl['benchmark']}/{block['method']}/{item['subset']}/{block['measure']}",
            section=f"{block['method']} on {decl['benchmark']}: {block['measure']} x 100",
            label=f"{block['method']}, {item['subset']} ({item.get('column', item['subset'])})",
            value=_number(item.get("value"), path, item["subset"]),
            unit=block.get("unit", "%"),
            decimals=int(block.get("decimals", 1)),
            where=block.get("where", ""),
            statement=block.get("statement", ""),
            command=command,
            route="results",
            benchmark=decl["benchmark"],
            measure=block["measure"],
            view=block.get("setting", "monolingual"),
            subset=item["subset"],
            method=block["method"],
            reference=decl.get("reference"),
        )
        for item in block["figures"]
    ]


def load_source(path: Path) -> Source:
    try:
        decl = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise _bad(path, f"not a readable declaration ({exc})") from None
    name = decl.get("name")
    if not isinstance(name, str) or name != path.stem:
        raise _bad(path, f"name {name!r} must be the file's name ({path.stem})")
    defaults = {**decl.get("defaults", {}), "benchmark": decl.get("benchmark"), "revision": decl.get("revision")}
    methods = [
        RerunMethod(reranker, spec["method"], spec.get("key"), spec.get("gpu"))
        for reranker, spec in decl.get("rerun", {}).get("methods", {}).items()
    ]
    figures: list[Figure] = []
    if "tables" in decl:
        tables = _table_figures(path, name, decl)
        figures += tables + _rerun_figures(name, decl, tables, methods)
    if "results" in decl:
        figures += _results_figures(path, name, decl)
    for claim in decl.get("claims", []):
        figures += _claim_figures(path, name, claim, defaults)
    ids = [f.id for f in figures]
    if len(ids) != len(set(ids)):
        raise _bad(path, "two figures share an id")
    assert all(f.route in ROUTES for f in figures)
    return Source(
        name=name,
        title=decl.get("title", name),
        citation=decl.get("citation", ""),
        benchmark=decl.get("benchmark"),
        revision=decl.get("revision"),
        revision_tag=decl.get("revision_tag"),
        figures=tuple(figures),
        rerun=tuple(methods),
        path=path,
    )


def source_names() -> list[str]:
    return sorted(p.stem for p in Path(PUBLISHED_DIR).glob("*.toml"))


def load_sources(names: list[str] | None = None) -> list[Source]:
    """The named sources (all when none is named), in the order given; an unknown name is refused."""
    known = source_names()
    wanted = list(dict.fromkeys(names)) if names else known
    for name in wanted:
        if name not in known:
            raise UsageError(f"unknown source '{name}'", f"choose from {choices(known)}")
    return [load_source(Path(PUBLISHED_DIR) / f"{name}.toml") for name in wanted]


def sources_of_benchmark(benchmark: str) -> list[Source]:
    return [s for s in load_sources() if s.benchmark == benchmark]

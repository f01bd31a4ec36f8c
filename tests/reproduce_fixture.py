"""Published figures for the card-layout fixture release (rcp_fixture.card_release_files), hand-computed.

The table cells come from `oracle_ndcg`, each pattern's DCG written out (tie groups averaged by hand), never from
the code under test; one cell is printed 0.06 points off what its runs give (it must differ), one 0.04 off (it must
be reproduced). The claims take the fixture's values by construction (3 identical-text groups, 3 empty pages, ...);
the derived claims are recounted from the oracle's table by the loops below. The declaration is the real
rcp-card.toml with these values put in.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import rcp_fixture as F
from evals_repro.benchmarks.rcp_release import NATIVE_LANGUAGE
from evals_repro.reproduce import figures as published

L3 = math.log2(3)
DISCOUNTS = (1.0, 1 / L3, 0.5)
ORDERS = {"P": "abc", "R": "cba", "S": "bac"}
DIFFERS_CELL = ("native", "CTXL-RR-1B", "hr")  # replays 99.94, printed 100.0
REPRODUCED_CELL = ("native", "CTXL-RR-1B", "computer_science")  # replays 99.96, printed 100.0
METRICS = ("rcp_ndcg_at_10", "qrel_ndcg_at_10")
RULES = ("doc-id", "group-mean")


def oracle_ndcg(pattern: str, values: dict[str, float], rule: str) -> float:
    ideal = sum(v * d for v, d in zip(sorted(values.values(), reverse=True), DISCOUNTS))
    if pattern == "T" and rule == "group-mean":  # a and b tie on top: each position gets their mean gain
        dcg = (values["a"] + values["b"]) / 2 * (DISCOUNTS[0] + DISCOUNTS[1]) + values["c"] * DISCOUNTS[2]
    else:  # T under doc-id: ids descending, so `<domain>-b` before `<domain>-a`
        order = "bac" if pattern == "T" else ORDERS[pattern]
        dcg = sum(values[p] * d for p, d in zip(order, DISCOUNTS))
    return dcg / ideal


def subset_value(model_index: int, domain: str, language: str, metric: str, rule: str) -> float:
    rows = F.card_judgments(domain, language)
    column = 2 if metric == "rcp_ndcg_at_10" else 1
    values = {page.rsplit("-", 1)[1]: float(row[column]) for row in rows for page in [row[0]]}
    return oracle_ndcg(F.card_pattern(model_index, domain, language), values, rule)


def oracle_cells() -> dict[tuple[str, str, str, str, str], float]:
    """(view, metric, rule, reranker, column) -> the cell in %, exact."""
    cells = {}
    for index, name in enumerate(F.CARD_MODELS.values()):
        for metric in METRICS:
            for rule in RULES:
                native = [subset_value(index, d, NATIVE_LANGUAGE[d], metric, rule) for d in F.CARD_DOMAINS]
                six = [
                    sum(subset_value(index, d, lang, metric, rule) for lang in F.CARD_LANGUAGES) / 6
                    for d in F.CARD_DOMAINS
                ]
                for view, row in (("native", native), ("mean6", six)):
                    for domain, value in zip(F.CARD_DOMAINS, row):
                        cells[(view, metric, rule, name, domain)] = 100 * value
                    cells[(view, metric, rule, name, "mean")] = 100 * sum(row) / len(row)
    return cells


def printed_cells() -> dict[tuple[str, str, str, str, str], float]:
    """The fixture card's printed tables: the oracle rounded to one decimal, the DIFFERS_CELL printed 100.0."""
    out = {key: float(f"{value:.1f}") for key, value in oracle_cells().items()}
    view, name, domain = DIFFERS_CELL
    for rule in RULES:
        out[(view, "rcp_ndcg_at_10", rule, name, domain)] = 100.0
    return out


def derived_values(cells: dict) -> dict[str, float]:
    """The derived claims recounted from a table by hand-written loops (the test's own recount)."""
    names = list(F.CARD_MODELS.values())
    out: dict[str, float] = {}
    for short, metric in (("rcp", "rcp_ndcg_at_10"), ("qrel", "qrel_ndcg_at_10")):
        a = [round(cells[("native", metric, "doc-id", n, c)], 1) for n in names for c in (*F.CARD_DOMAINS, "mean")]
        b = [round(cells[("native", metric, "group-mean", n, c)], 1) for n in names for c in (*F.CARD_DOMAINS, "mean")]
        out[f"card.rule_a_vs_b_{short}.largest"] = round(max(abs(x - y) for x, y in zip(a, b)), 1)
        out[f"card.rule_a_vs_b_{short}.differ"] = sum(x != y for x, y in zip(a, b))
        out[f"card.rule_a_vs_b_{short}.printed"] = len(a)
        gaps = [
            cells[("mean6", metric, "group-mean", n, d)] - cells[("native", metric, "group-mean", n, d)]
            for n in names
            for d in F.CARD_DOMAINS
        ]
        out[f"card.mean6_vs_native_{short}.mean"] = round(sum(gaps) / len(gaps), 1)
        out[f"card.mean6_vs_native_{short}.lowest"] = round(min(gaps), 1)
        out[f"card.mean6_vs_native_{short}.highest"] = round(max(gaps), 1)
        for view in ("native", "mean6"):
            diffs = [
                cells[(view, metric, "doc-id", n, d)] - cells[(view, metric, "group-mean", n, d)]
                for n in names
                for d in F.CARD_DOMAINS
            ]
            out[f"card.tie_rule_max.{short}_{view}_largest"] = round(max(abs(x) for x in diffs), 2)
            if short == "rcp":
                out[f"card.tie_rule_max.rcp_{view}_mean"] = round(sum(diffs) / len(diffs), 2)
    return out


# The fixture's claims, by construction of rcp_fixture.card_release_files.
CLAIMS = {
    "card.rrf_exact.max_score_diff": 1e-12,
    "card.rrf_exact.order_mismatches": 0,
    "card.gt_injected.injected": len(F.INJECTED),
    "card.gt_injected.pool_pairs": 48 * 3,
    "card.criteria_rows.rows": 0.0,  # 80 rows: 0.0 million at one decimal
    "card.criteria_rows.fewer_than_release_1": 0,
    "card.identical_ocr.groups": 3,
    "card.identical_ocr.pages": 6,
    "card.identical_ocr.pharmaceuticals_groups": 2,
    "card.identical_ocr.pharmaceuticals_pages": 4,
    "card.identical_ocr.different_qrels": 2,
    "card.identical_ocr.different_qrels_pharmaceuticals": 1,
    "card.identical_ocr.different_qrels_physics": 1,
    "card.empty_ocr.pages": 3,
    "card.empty_ocr.industrial": 2,
    "card.empty_ocr.finance_en": 0,
    "card.empty_ocr.energy": 0,
    "card.empty_ocr.hr": 1,
    "card.empty_ocr.finance_fr": 0,
    "card.empty_ocr.computer_science": 0,
    "card.empty_ocr.pooled_or_relevant": 0,
}
RERUN_METHODS = {
    "RR4-Pro": {"method": "pool+cohere", "key": "COHERE_API_KEY"},
    "Voyage2.5": {"method": "pool+voyage", "key": "VOYAGE_API_KEY"},
    "zerank-2": {"method": "pool+zerank-2", "gpu": "zerank-2"},
}


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{ " + ", ".join(f'"{k}" = {_toml(v)}' for k, v in value.items()) + " }"


def write_card_figures(folder: Path) -> Path:
    """rcp-card.toml and its tables' TSV for the fixture release, in `folder` (point figures.PUBLISHED_DIR at it)."""
    folder.mkdir(parents=True, exist_ok=True)
    real = tomllib.loads((published.PUBLISHED_DIR / "rcp-card.toml").read_text(encoding="utf-8"))
    values = CLAIMS | derived_values(oracle_cells())
    lines = [f"{k} = {_toml(v)}" for k, v in real.items() if not isinstance(v, (dict, list))]
    lines += ["", "[tables]", *(f"{k} = {_toml(v)}" for k, v in real["tables"].items())]
    lines += ["", "[rerun]", *(f"{k} = {_toml(v)}" for k, v in real["rerun"].items() if k != "methods")]
    lines += ["", "[rerun.methods]", *(f'"{k}" = {_toml(v)}' for k, v in RERUN_METHODS.items())]
    for claim in real["claims"]:
        lines += ["", "[[claims]]"]
        for key, value in claim.items():
            if key == "figures":
                figures = [dict(f, value=values.get(f"{claim['id']}.{f['name']}", f["value"])) for f in value]
                value = figures
            lines.append(f"{key} = {_toml(value)}")
    (folder / "rcp-card.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = ["view\tmetric\ttie_rule\treranker\tdomain\tvalue_percent"]
    rows += [f"{v}\t{m}\t{r}\t{n}\t{c}\t{value:.1f}" for (v, m, r, n, c), value in printed_cells().items()]
    (folder / real["tables"]["file"]).write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder

"""What the study's reranker calls cost: per call (in quality.jsonl, latency.jsonl, warmup.jsonl), per model,
and per 1,000 queries; recorded in the manifest after each phase and shown in the report.

A call record carries `billed` ({"provider model": {unit: amount}}) and `cost_usd` (None when a model has
no price: it is then named, never counted as 0). Per 1,000 queries is the quality phase's cost of a
model divided by the queries it scored (each query's candidates reranked once per plugin version: an upgraded
plugin reranker scores them again, and pays again).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..base.io import read_jsonl
from ..base.usage import Usage
from ..providers.prices import Billed, cost_of, current_prices, usd_text

PHASES = {"quality": "quality.jsonl", "latency": "latency.jsonl", "warm-up": "warmup.jsonl"}


def call_bill(before: Billed, after: Billed) -> dict[str, Any]:
    """One call's billed units (from its worker's Usage, before and after) and their cost at current prices."""
    delta = {key: value - before.get(key, 0) for key, value in after.items() if value != before.get(key, 0)}
    if not delta:
        return {}
    units: dict[str, dict[str, float]] = {}
    for (provider, model, unit), amount in delta.items():
        units.setdefault(f"{provider} {model}", {})[unit] = amount
    costing = cost_of(delta)
    return {"billed": units, "cost_usd": round(costing.usd, 10) if costing.known else None}


def bill_into(spent: Usage, record: dict[str, Any]) -> None:
    """Count a call record's billed units into a phase's spend."""
    for label, units in (record.get("billed") or {}).items():
        provider, _, model = label.partition(" ")
        spent.bill(provider, model, units)


def study_costs(study_dir: Path) -> dict[str, Any]:
    """Per model: USD per phase and in all, the queries its quality phase scored, USD per 1,000 queries."""
    models: dict[str, dict[str, Any]] = {}
    for phase, name in PHASES.items():
        for record in read_jsonl(Path(study_dir) / name, damaged="skip"):
            if not record.get("billed"):
                continue
            entry = models.setdefault(record["model"], {"billed": {}, "queries": set(), "phases": {}})
            phase_billed = entry["phases"].setdefault(phase, {})
            for label, units in record["billed"].items():
                provider, _, model = label.partition(" ")
                for unit, amount in units.items():
                    key = (provider, model, unit)
                    phase_billed[key] = phase_billed.get(key, 0) + amount
                    entry["billed"][key] = entry["billed"].get(key, 0) + amount
            if phase == "quality" and record.get("status") == "ok":  # a query scored again by a plugin's new version
                entry["queries"].add((record.get("plugin"), record["benchmark"], record["subset"], record["query_id"]))
    table = current_prices()
    shown: dict[str, Any] = {}
    for model, entry in sorted(models.items()):
        total = table.cost(entry["billed"])
        phases = {phase: table.cost(billed) for phase, billed in entry["phases"].items()}
        quality = phases.get("quality")
        queries = len(entry["queries"])
        per_1000 = quality.usd / queries * 1000 if quality is not None and quality.known and queries else None
        shown[model] = {
            "usd": round(total.usd, 8) if total.known else None,
            "by_phase": {p: (round(c.usd, 8) if c.known else None) for p, c in phases.items()},
            "price_unknown": total.unknown,
            "quality_queries": queries,
            "usd_per_1000_queries": round(per_1000, 8) if per_1000 is not None else None,
        }
    return {"prices_date": table.date, "prices": table.source, "models": shown}


def cost_markdown(costs: dict[str, Any]) -> list[str]:
    """The report's cost table (empty when nothing was billed)."""
    if not costs.get("models"):
        return []
    lines = [
        "",
        f"## Cost (USD, list prices of {costs['prices_date']})",
        "",
        "| model | quality | latency + warm-up | total | quality queries | per 1,000 queries |",
        "|---|---:|---:|---:|---:|---:|",
    ]

    def shown(value: float | None, unknown: list[str]) -> str:
        return usd_text(value) if value is not None else f"price unknown: {', '.join(unknown)}"

    for model, entry in costs["models"].items():
        phases = entry["by_phase"]
        timed = [phases[p] for p in ("latency", "warm-up") if p in phases]
        timing = None if any(v is None for v in timed) else sum(v for v in timed if v is not None)
        per = entry["usd_per_1000_queries"]
        lines.append(
            f"| {model} | {shown(phases.get('quality', 0.0), entry['price_unknown'])} | "
            f"{shown(timing, entry['price_unknown'])} | {shown(entry['usd'], entry['price_unknown'])} | "
            f"{entry['quality_queries']} | {usd_text(per) if per is not None else ''} |"
        )
    return lines

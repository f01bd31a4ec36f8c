"""Replay the release card's reranker tables from `provenance-runs`: no model is called.

Each of the 14 rerankers' stored scores is restricted to the query's judged pool and scored with
RCP-nDCG@10 (the `gain` column) and qrel-nDCG@10 (the integer `score`, linear gain), under both tie
rules. Two views: native-language (each question once, in the language it was written in) and the
6-language mean (the mean over the six per-language means, mteb's main score).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..base.progress import progress_bar
from ..benchmarks.rcp_release import DOMAINS, LANGUAGES, NATIVE_LANGUAGE, Release
from ..benchmarks.rcp_tables import read_pools, read_qrels, run_groups
from ..metrics.protocol import running_mean
from ..metrics.published.ndcg_float import dcg_many_at_k, idcg_at_k

# Hub model id -> the paper's short name, in the card's row order.
RERANKERS = {
    "ctxl-rerank-v2-instruct-multilingual-1b": "CTXL-RR-1B",
    "ctxl-rerank-v2-instruct-multilingual-2b": "CTXL-RR-2B",
    "ctxl-rerank-v2-instruct-multilingual-6b": "CTXL-RR-6B",
    "jina-reranker-v3": "Jina-RR-v3",
    "Qwen3-Reranker-0.6B": "Qwen3-RR-0.6B",
    "Qwen3-Reranker-4B": "Qwen3-RR-4B",
    "Qwen3-Reranker-8B": "Qwen3-RR-8B",
    "rerank-v4.0-fast": "RR4-Fast",
    "rerank-v4.0-pro": "RR4-Pro",
    "rerank-2.5-lite": "Voyage2.5-lt",
    "rerank-2.5": "Voyage2.5",
    "zerank-1-small": "zerank-1-sm",
    "zerank-1": "zerank-1",
    "zerank-2": "zerank-2",
}
METRICS = ("rcp_ndcg_at_10", "qrel_ndcg_at_10")
CARD_TIE_RULES = ("doc-id", "group-mean")  # the card's rules (a) and (b): what it prints, and all a replay computes
VIEWS = ("native", "mean6")
K = 10


@dataclass
class Replay:
    """Mean scores per (model, domain, language, tie rule, metric), with query counts."""

    revision: str
    domains: list[str]
    languages: list[str]
    # (model, domain, language, tie_rule) -> {metric: mean over the subset's scored queries}
    means: dict[tuple[str, str, str, str], dict[str, float]] = field(default_factory=dict)
    queries: dict[tuple[str, str], int] = field(default_factory=dict)  # (domain, language) -> scored queries

    @property
    def models(self) -> list[str]:
        seen = {key[0] for key in self.means}
        return [m for m in RERANKERS if m in seen] + sorted(seen - set(RERANKERS))

    def cell(self, view: str, model: str, domain: str, tie_rule: str, metric: str) -> float | None:
        """One table cell (a fraction, not %); None when the model has no run on that domain."""
        languages = [NATIVE_LANGUAGE[domain]] if view == "native" else self.languages
        values = [self.means.get((model, domain, lang, tie_rule), {}).get(metric) for lang in languages]
        present = [v for v in values if v is not None]
        return running_mean(present) if len(present) == len(values) else None

    def row_mean(self, view: str, model: str, tie_rule: str, metric: str) -> float | None:
        cells = [self.cell(view, model, d, tie_rule, metric) for d in self.domains]
        present = [c for c in cells if c is not None]
        return running_mean(present) if len(present) == len(cells) else None


def score_query(
    scores: dict[str, float], pool: list[str] | None, gains: dict[str, float], grades: dict[str, int], tie_rule: str
) -> tuple[float, float]:
    """(RCP-nDCG@10, qrel-nDCG@10) of one query's stored scores, restricted to its pool."""
    return score_query_rules(scores, pool, gains, grades, (tie_rule,))[tie_rule]


def score_query_rules(
    scores: dict[str, float],
    pool: list[str] | None,
    gains: dict[str, float],
    grades: dict[str, int],
    tie_rules: Iterable[str],
) -> dict[str, tuple[float, float]]:
    """`score_query` under several tie rules: the pool restriction and ideal DCGs once, one ranking per rule for
    both gain mappings (`ndcg_float.dcg_many_at_k`). The inputs were checked where they were read (gains finite and
    >= 0 in `read_qrels`, NaN scores dropped), so nothing is re-checked per query."""
    if pool is not None:
        scores = {doc: scores[doc] for doc in pool if doc in scores}
    grade_gains = {d: float(g) for d, g in grades.items()}
    ideal = (idcg_at_k(gains, K), idcg_at_k(grade_gains, K))
    out = {}
    for rule in tie_rules:
        dcg = dcg_many_at_k(scores, (gains, grade_gains), K, rule)
        out[rule] = (dcg[0] / ideal[0] if ideal[0] > 0 else 0.0, dcg[1] / ideal[1] if ideal[1] > 0 else 0.0)
    return out


def replay(
    release: Release,
    domains: Iterable[str] = DOMAINS,
    languages: Iterable[str] = LANGUAGES,
    tie_rules: Iterable[str] = CARD_TIE_RULES,
) -> Replay:
    """The card's per-subset means from `provenance-runs`, one domain at a time, its runs streamed one model and
    query at a time (`run_groups`): memory is bounded by one domain's rows as Arrow columns, time linear in them."""
    domains, languages, tie_rules = list(domains), list(languages), list(tie_rules)
    result = Replay(revision=str(release.revision), domains=domains, languages=languages)
    with progress_bar("replaying provenance-runs (domains)", len(domains)) as bar:
        for domain in domains:
            judged = {lang: read_qrels(release, f"{domain}__{lang}") for lang in languages}
            pools = {lang: read_pools(release, f"{domain}__{lang}") for lang in languages}
            judged_in: dict[str, list[str]] = {}  # qid -> the languages whose subset judges it
            for lang in languages:
                result.queries[(domain, lang)] = len(judged[lang].gains)
                for qid in judged[lang].gains:
                    judged_in.setdefault(qid, []).append(lang)
            scored: dict[tuple[str, str, str], dict[str, tuple[float, float]]] = {}
            for model, qid, run in run_groups(release, domain):
                for lang in judged_in.get(qid, ()):
                    j = judged[lang]
                    by_rule = score_query_rules(
                        run, pools[lang].get(qid), j.gains[qid], j.qrels.get(qid, {}), tie_rules
                    )
                    for rule, pair in by_rule.items():
                        scored.setdefault((model, lang, rule), {})[qid] = pair
            for (model, lang, rule), by_query in scored.items():
                pairs = [by_query[q] for q in judged[lang].gains if q in by_query]  # the qrels' query order
                result.means[(model, domain, lang, rule)] = {
                    "rcp_ndcg_at_10": running_mean(p[0] for p in pairs),
                    "qrel_ndcg_at_10": running_mean(p[1] for p in pairs),
                }
            bar.advance()
    return result


_VIEW_TITLES = {"native": "native-language questions", "mean6": "mean over the {n} query languages"}
_RULE_TITLES = {"doc-id": "rule (a): document-id tie-break", "group-mean": "rule (b): group-mean gain for ties"}
_METRIC_TITLES = {"rcp_ndcg_at_10": "RCP-nDCG@10", "qrel_ndcg_at_10": "qrel-nDCG@10"}


def format_tables(result: Replay, tie_rules: Iterable[str] = CARD_TIE_RULES) -> str:
    """Markdown tables in %, one decimal: for each view and tie rule, RCP-nDCG@10 then qrel-nDCG@10."""
    lines = [f"Replayed from provenance-runs at revision {result.revision}."]
    header = "| Reranker | " + " | ".join(result.domains) + " | Mean |"
    rule_line = "|---|" + "---:|" * (len(result.domains) + 1)

    def pct(value: float | None) -> str:
        return "–" if value is None else f"{100 * value:.1f}"

    for view in VIEWS:
        for rule in tie_rules:
            for metric in METRICS:
                lines += [
                    "",
                    f"**{_METRIC_TITLES[metric]} (%), {_VIEW_TITLES[view].format(n=len(result.languages))}, {_RULE_TITLES[rule]}**",
                    "",
                    header,
                    rule_line,
                ]
                for model in result.models:
                    cells = [pct(result.cell(view, model, d, rule, metric)) for d in result.domains]
                    cells.append(pct(result.row_mean(view, model, rule, metric)))
                    lines.append(f"| {RERANKERS.get(model, model)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"

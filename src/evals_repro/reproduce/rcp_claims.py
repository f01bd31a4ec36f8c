"""The rcp-ndcg ViDoRe v3 card's claims, computed: from its tables (derived) or from the release's files.

Derived claims are recounted from table cells (the replayed ones, or the card's own printed ones for a consistency
note), never typed in: "32 of 126 printed values differ" counts the native-view cells that differ between rule (a)
and rule (b) once both are rounded as the card prints them. The data claims read the release: the pool files
(`gt_injected`), the rebuilt fusion (`rcp pool`'s check), the corpora's OCR text, the judge-criteria row counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..base.errors import DataError, EvalsError
from ..benchmarks.rcp_release import DOMAINS, LANGUAGES, SPLIT, Release, resolve_tag
from ..benchmarks.rcp_tables import read_pools, read_qrels
from ..metrics.protocol import running_mean
from .figures import table_id

MEAN = "mean"
CRITERIA = "provenance-judge-criteria"


def _printed(value: float, decimals: int) -> float:
    """The value as the card prints it (Python's rounding of the shortest repr, as `f"{x:.1f}"`)."""
    return float(f"{value:.{decimals}f}")


def derived_figures(
    cells: Mapping[str, float], rerankers: list[str], domains: list[str], decimals: int = 1
) -> dict[str, float]:
    """Every derived claim whose cells are all present, from cells in % keyed by `figures.table_id`."""
    out: dict[str, float] = {}
    columns = [*domains, MEAN]

    def cell(view: str, metric: str, rule: str, reranker: str, column: str) -> float | None:
        return cells.get(table_id(view, metric, rule, reranker, column))

    def pairs(view: str, metric: str, cols: list[str]) -> list[tuple[float, float]] | None:
        found = [
            (cell(view, metric, "doc-id", r, c), cell(view, metric, "group-mean", r, c))
            for r in rerankers
            for c in cols
        ]
        return None if not found or any(a is None or b is None for a, b in found) else found  # type: ignore[return-value]

    for short, metric in (("rcp", "rcp_ndcg_at_10"), ("qrel", "qrel_ndcg_at_10")):
        printed = pairs("native", metric, columns)
        if printed is not None:
            rounded = [(_printed(a, decimals), _printed(b, decimals)) for a, b in printed]
            name = f"card.rule_a_vs_b_{short}"
            out[f"{name}.largest"] = _printed(max(abs(a - b) for a, b in rounded), decimals)
            out[f"{name}.differ"] = float(sum(a != b for a, b in rounded))
            out[f"{name}.printed"] = float(len(rounded))
        diffs = []
        for r in rerankers:
            for d in domains:
                six, native = cell("mean6", metric, "group-mean", r, d), cell("native", metric, "group-mean", r, d)
                diffs.append(None if six is None or native is None else six - native)
        if diffs and all(x is not None for x in diffs):
            present = [x for x in diffs if x is not None]
            name = f"card.mean6_vs_native_{short}"
            out |= {
                f"{name}.mean": running_mean(present),
                f"{name}.lowest": min(present),
                f"{name}.highest": max(present),
            }
        for view in ("native", "mean6"):
            by_cell = pairs(view, metric, domains)
            if by_cell is None:
                continue
            out[f"card.tie_rule_max.{short}_{view}_largest"] = max(abs(a - b) for a, b in by_cell)
            if short == "rcp":
                out[f"card.tie_rule_max.rcp_{view}_mean"] = running_mean(a - b for a, b in by_cell)
    return out


def pool_counts(
    release: Release, domains: Sequence[str] = DOMAINS, languages: Sequence[str] = LANGUAGES
) -> dict[str, float]:
    """card.gt_injected: pool pairs provenance-pool marks injected (a flag per row, or a list per query), of all pool
    pairs (the pages of every query's `top_ranked` pool)."""
    import pyarrow.compute as pc

    injected = 0
    for domain in domains:
        for relpath in release.provenance_files("provenance-pool", domain):
            column = release.arrow(relpath, ("gt_injected",))["gt_injected"]
            if hasattr(column.type, "value_type"):  # a list of injected page ids per query
                injected += int(pc.sum(pc.list_value_length(column)).as_py() or 0)
            else:
                injected += int(pc.sum(pc.cast(pc.fill_null(column, False), "int64")).as_py() or 0)
    pairs = sum(
        len(pool) for d in domains for lang in languages for pool in read_pools(release, f"{d}__{lang}").values()
    )
    return {"card.gt_injected.injected": float(injected), "card.gt_injected.pool_pairs": float(pairs)}


def fusion_check(release: Release, subsets: list[str]) -> dict[str, float]:
    """card.rrf_exact: the largest |RRF - rrf_fused| and the queries fused in another id order (`rcp pool`'s check)."""
    from ..rcp.pool import check_pools

    checks = check_pools(release, subsets)
    return {
        "card.rrf_exact.max_score_diff": max((c.max_score_diff for c in checks), default=0.0),
        "card.rrf_exact.order_mismatches": float(sum(len(c.order_mismatch) for c in checks)),
    }


def ocr_figures(
    release: Release, domains: Sequence[str] = DOMAINS, languages: Sequence[str] = LANGUAGES
) -> dict[str, float]:
    """card.identical_ocr and card.empty_ocr from each domain's corpus text, pools and qrels."""
    groups = pages = diff_groups = 0
    empty_total = empty_pooled = 0
    out: dict[str, float] = {}
    for domain in domains:
        first = f"{domain}__{languages[0]}"
        texts: dict[str, str] = {}
        for relpath in release.config_files(f"{first}-corpus", SPLIT, f"{first}/corpus.parquet"):
            table = release.arrow(relpath, ("id", "text"))
            texts.update(zip(map(str, table["id"].to_pylist()), (t or "" for t in table["text"].to_pylist())))
        empty = {pid for pid, text in texts.items() if not text.strip()}
        by_text: dict[str, list[str]] = {}
        for pid, text in texts.items():
            if pid not in empty:
                by_text.setdefault(text, []).append(pid)
        domain_groups = [sorted(ids) for ids in by_text.values() if len(ids) > 1]
        group_of = {pid: k for k, ids in enumerate(domain_groups) for pid in ids}
        differing: set[int] = set()
        touched: set[str] = set()  # pooled or relevant pages of the domain
        for lang in languages:
            subset = f"{domain}__{lang}"
            for pool in read_pools(release, subset).values():
                touched.update(pool)
            for grades in read_qrels(release, subset).qrels.values():
                touched.update(page for page, grade in grades.items() if grade > 0)
                seen = {group_of[p] for p in grades if p in group_of}
                for k in seen:
                    if len({grades.get(p, 0) for p in domain_groups[k]}) > 1:
                        differing.add(k)
        groups += len(domain_groups)
        pages += sum(len(ids) for ids in domain_groups)
        diff_groups += len(differing)
        empty_total += len(empty)
        empty_pooled += len(empty & touched)
        out[f"card.empty_ocr.{domain}"] = float(len(empty))
        out[f"card.identical_ocr.{domain}_groups"] = float(len(domain_groups))
        out[f"card.identical_ocr.{domain}_pages"] = float(sum(len(ids) for ids in domain_groups))
        out[f"card.identical_ocr.different_qrels_{domain}"] = float(len(differing))
    return out | {
        "card.identical_ocr.groups": float(groups),
        "card.identical_ocr.pages": float(pages),
        "card.identical_ocr.different_qrels": float(diff_groups),
        "card.empty_ocr.pages": float(empty_total),
        "card.empty_ocr.pooled_or_relevant": float(empty_pooled),
    }


def criteria_rows(release: Release) -> int | None:
    """Rows of the card's `provenance-judge-criteria` (every split; parquet footers only); None if undeclared."""
    import pyarrow.parquet as pq

    files = release.all_config_files(CRITERIA)
    if files is None:
        return None
    total = 0
    for relpath in files:
        try:
            total += pq.ParquetFile(release.path(relpath)).metadata.num_rows
        except EvalsError:
            raise
        except Exception as exc:  # pyarrow raises several types for damaged files
            raise DataError(
                f"{release.label}/{relpath}: not a readable parquet file ({exc})", "delete it and rerun"
            ) from None
    return total


def criteria_figures(release: Release, unavailable: dict[str, str]) -> dict[str, float]:
    """card.criteria_rows: this release's rows (millions), and release 1's minus this one's (from the Hub)."""
    rows = criteria_rows(release)
    if rows is None:
        reason = f"the release's card to declare {CRITERIA} (this revision's does not)"
        unavailable["card.criteria_rows.rows"] = unavailable["card.criteria_rows.fewer_than_release_1"] = reason
        return {}
    out = {"card.criteria_rows.rows": rows / 1e6}
    first = "card.criteria_rows.fewer_than_release_1"
    if release.snapshot is not None:
        unavailable[first] = "release 1 from the Hub (a --snapshot holds one revision)"
        return out
    commit = resolve_tag("v1", release.releases())
    if commit is None:
        unavailable[first] = "release 1 in the release's provenance/releases.json (it lists no v1 tag)"
        return out
    older = criteria_rows(Release(repo=release.repo, revision=commit))
    if older is None:
        unavailable[first] = f"release 1's card to declare {CRITERIA}"
    else:
        out[first] = float(older - rows)
    return out

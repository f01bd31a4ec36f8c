"""Rebuild the judged pools from `provenance-first-stage`: RRF of the three first stages, then
the ground-truth injection rule, checked against the stored `rrf_fused` rankings, `top_ranked` and
the pages `provenance-pool` marks `gt_injected`.

Fusion: unweighted RRF, k = 60, rankings in the order embed_v4, bm25, octen, top 150.
Injection: each qrel-positive page the fused top 150 missed replaces the lowest-ranked page of
the pool that is not qrel-positive (positives taken by grade descending, then page id).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..base.errors import DataError
from ..base.progress import progress_bar
from ..benchmarks.rcp_release import FIRST_STAGE_ORDER, Release, split_subset
from ..benchmarks.rcp_tables import read_first_stage, read_injected, read_pools, read_qrels, read_query_ids
from ..retrieval.fusion import DEFAULT_RRF_K, rrf_fuse

POOL_DEPTH = 150
SCORE_TOLERANCE = 1e-12


@dataclass
class PoolCheck:
    subset: str
    queries: int = 0
    fused_reproduced: int = 0  # same id order and scores within 1e-12 of rrf_fused
    fused_mismatch: list[str] = field(default_factory=list)
    order_mismatch: list[str] = field(default_factory=list)  # of those, the queries whose id order differs
    max_score_diff: float = 0.0
    queries_injected: int = 0
    pages_injected: int = 0
    pool_matches: int = 0  # rebuilt pool (fused + injection) equals top_ranked as a set
    pool_mismatch: list[str] = field(default_factory=list)
    # our injected pages equal provenance-pool's gt_injected ones (None: the release has no provenance-pool)
    injected_matches: int | None = None
    injected_mismatch: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.fused_mismatch and not self.pool_mismatch and not self.injected_mismatch


def inject_ground_truth(fused: list[str], positives: dict[str, int]) -> tuple[list[str], list[str]]:
    """(pool, injected pages): missed positives replace the lowest-ranked non-positive pages in place."""
    pool = list(fused)
    present = set(pool)
    missed = sorted((d for d, g in positives.items() if g > 0 and d not in present), key=lambda d: (-positives[d], d))
    injected: list[str] = []
    slot = len(pool) - 1
    for doc in missed:
        while slot >= 0 and positives.get(pool[slot], 0) > 0:
            slot -= 1
        if slot < 0:  # every slot holds a positive: nothing non-relevant left to replace
            pool.append(doc)
        else:
            pool[slot] = doc
            slot -= 1
        injected.append(doc)
    return pool, injected


def check_subset_pools(
    release: Release,
    subset: str,
    k: int = DEFAULT_RRF_K,
    depth: int = POOL_DEPTH,
    order: Iterable[str] = FIRST_STAGE_ORDER,
) -> PoolCheck:
    order = list(order)
    domain, _ = split_subset(subset)
    query_ids = set(read_query_ids(release, subset))
    stages = read_first_stage(release, domain, query_ids)
    missing = [name for name in [*order, "rrf_fused"] if name not in stages]
    if missing:
        raise DataError(
            f"{release.label} provenance-first-stage/{domain}: no rows of {subset}'s queries for retriever(s) "
            f"{', '.join(missing)}",
            f"expected {', '.join([*order, 'rrf_fused'])}",
        )
    judged = read_qrels(release, subset)
    published = read_pools(release, subset)
    released_injected = read_injected(release, domain, query_ids)
    check = PoolCheck(subset, injected_matches=None if released_injected is None else 0)
    for qid, stored in stages["rrf_fused"].items():
        check.queries += 1
        rankings = [[doc for doc, _ in stages[name].get(qid, [])] for name in order]
        fused = rrf_fuse(rankings, k=k, top=depth)
        same_order = [d for d, _ in fused] == [d for d, _ in stored]
        diff = max((abs(a - b) for (_, a), (_, b) in zip(fused, stored)), default=0.0)
        check.max_score_diff = max(check.max_score_diff, diff)
        if same_order and diff <= SCORE_TOLERANCE:
            check.fused_reproduced += 1
        else:
            check.fused_mismatch.append(qid)
            if not same_order:
                check.order_mismatch.append(qid)
        pool, injected = inject_ground_truth([d for d, _ in fused], judged.qrels.get(qid, {}))
        if injected:
            check.queries_injected += 1
            check.pages_injected += len(injected)
        if qid in published and set(pool) == set(published[qid]):
            check.pool_matches += 1
        else:
            check.pool_mismatch.append(qid)
        if released_injected is not None and check.injected_matches is not None:
            if set(injected) == released_injected.get(qid, set()):
                check.injected_matches += 1
            else:
                check.injected_mismatch.append(qid)
    return check


def check_pools(
    release: Release, subsets: Iterable[str], k: int = DEFAULT_RRF_K, depth: int = POOL_DEPTH
) -> list[PoolCheck]:
    subsets = list(subsets)
    checks = []
    with progress_bar("rebuilding pools", len(subsets)) as bar:
        for subset in subsets:
            checks.append(check_subset_pools(release, subset, k, depth))
            bar.advance()
    return checks


def format_report(checks: list[PoolCheck], revision: str) -> str:
    lines = [
        f"Pools rebuilt from provenance-first-stage at revision {revision} "
        f"(RRF k={DEFAULT_RRF_K}, {', '.join(FIRST_STAGE_ORDER)}, top {POOL_DEPTH}).",
        "",
        "| Subset | Queries | RRF reproduced | Max score diff | Queries injected | Pages injected | Pool = top_ranked "
        "| Injected = gt_injected |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in checks:
        injected = "–" if c.injected_matches is None else str(c.injected_matches)
        lines.append(
            f"| {c.subset} | {c.queries} | {c.fused_reproduced} | {c.max_score_diff:.1e} | "
            f"{c.queries_injected} | {c.pages_injected} | {c.pool_matches} | {injected} |"
        )
    for c in checks:
        if c.fused_mismatch:
            lines.append(
                f"{c.subset}: rrf_fused not reproduced for {len(c.fused_mismatch)} queries, "
                f"first {', '.join(c.fused_mismatch[:5])}"
            )
        if c.pool_mismatch:
            lines.append(
                f"{c.subset}: rebuilt pool differs from top_ranked for {len(c.pool_mismatch)} queries, "
                f"first {', '.join(c.pool_mismatch[:5])}"
            )
        if c.injected_mismatch:
            lines.append(
                f"{c.subset}: injected pages differ from provenance-pool's gt_injected for "
                f"{len(c.injected_mismatch)} queries, first {', '.join(c.injected_mismatch[:5])}"
            )
    return "\n".join(lines) + "\n"

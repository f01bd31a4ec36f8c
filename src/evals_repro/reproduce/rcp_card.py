"""The rcp-ndcg ViDoRe v3 card, recomputed from its release: the 8 tables (replayed from `provenance-runs`, no model
call), the claims derived from them and the claims about the release's own files.

`compute` runs it all (`reproduce rcp-card --run`) after checking the release is whole; `outcomes` turns what was
stored into each figure's outcome, recounting the derived claims from the stored cells every time.
"""

from __future__ import annotations

from ..base.errors import DataError
from ..base.progress import progress_bar
from ..benchmarks.rcp_release import DOMAINS, LANGUAGES, SPLIT, SUBSETS, Release
from ..benchmarks.rcp_release import PROVENANCE as FOLDERS
from .figures import Figure, Source, table_id
from .matrix import Outcome
from .rcp_claims import MEAN, derived_figures, fusion_check, ocr_figures, pool_counts
from .store import Stored

SUBSET_PARTS = ("queries", "qrels", "top_ranked")
PROVENANCE = ("provenance-runs", "provenance-first-stage", "provenance-pool")


def needed_files(release: Release) -> tuple[list[str], list[str]]:
    """(the files the card's recomputation reads, the declared ones no file answers)."""
    wanted: list[tuple[str, str, str]] = []
    for subset in SUBSETS:
        wanted += [(f"{subset}-{part}", SPLIT, f"{subset}/{part}.parquet") for part in SUBSET_PARTS]
    for domain in DOMAINS:
        first = f"{domain}__{LANGUAGES[0]}"
        wanted.append((f"{first}-corpus", SPLIT, f"{first}/corpus.parquet"))
        wanted += [(config, domain, f"provenance/{FOLDERS[config]}/{domain}.parquet") for config in PROVENANCE]
    files: list[str] = []
    unmatched: list[str] = []
    for config, split, fallback in wanted:
        try:
            files += release.config_files(config, split, fallback)
        except DataError:  # a declared pattern no file matches
            unmatched.append(f"{config} ({split})")
    return files, unmatched


def check_whole(release: Release) -> None:
    """Refuse a partial release (a snapshot missing subsets or provenance files) before any work: one line."""
    files, unmatched = needed_files(release)
    missing = unmatched + [f for f in files if not release.has(f)]
    if missing:
        where = str(release.snapshot) if release.snapshot is not None else release.label
        raise DataError(
            f"{where}: a partial release of {release.repo}: {len(missing)} of the {len(files) + len(unmatched)} files "
            f"the card's figures are computed from are missing (first {', '.join(missing[:3])})",
            "copy the whole release (48 subsets; provenance runs, first_stage and pool of the 8 domains)"
            + (", or pass --snapshot a complete copy" if release.snapshot is not None else ""),
        )


def table_cells(release: Release) -> dict[str, float]:
    """Every cell of the card's 8 tables, in %, from the replay of `provenance-runs`."""
    from ..rcp.replay import RERANKERS, replay

    result = replay(release)
    cells: dict[str, float] = {}
    for model in result.models:
        short = RERANKERS.get(model, model)
        for view in ("native", "mean6"):
            for rule in ("doc-id", "group-mean"):
                for metric in ("rcp_ndcg_at_10", "qrel_ndcg_at_10"):
                    for domain in result.domains:
                        value = result.cell(view, model, domain, rule, metric)
                        if value is not None:
                            cells[table_id(view, metric, rule, short, domain)] = 100 * value
                    mean = result.row_mean(view, model, rule, metric)
                    if mean is not None:
                        cells[table_id(view, metric, rule, short, MEAN)] = 100 * mean
    return cells


def compute(release: Release, source: Source) -> Stored:
    """Everything the card's figures are computed from (`reproduce rcp-card --run`): free, no model call."""
    from ..benchmarks.rcp_release import PINNED_REVISION
    from .rcp_claims import criteria_figures

    check_whole(release)
    stored = Stored(source.name, source.revision or PINNED_REVISION)
    steps = [
        ("the 8 tables (replay of provenance-runs)", lambda: table_cells(release)),
        ("the fusion check (rcp pool)", lambda: fusion_check(release, list(SUBSETS))),
        ("the injected pool pairs", lambda: pool_counts(release)),
        ("identical and empty OCR pages", lambda: ocr_figures(release)),
        ("the judge-criteria rows", lambda: criteria_figures(release, stored.unavailable)),
    ]
    with progress_bar("reproducing the rcp-ndcg-vidore-v3 card", len(steps)) as bar:
        for _, step in steps:
            stored.values.update(step())
            bar.advance()
    return stored


def _derived(source: Source, cells: dict[str, float]) -> dict[str, float]:
    rerankers = list(dict.fromkeys(f.label.split(", ")[0] for f in source.figures if f.route == "replay"))
    decimals = next((f.decimals for f in source.figures if f.route == "replay"), 1)
    return derived_figures(cells, rerankers, list(DOMAINS), decimals)


def outcomes(source: Source, stored: Stored | None) -> dict[str, Outcome]:
    """The outcome of every replayed, derived and release figure of the card."""
    values = stored.values if stored is not None else {}
    unavailable = stored.unavailable if stored is not None else {}
    replayed = {f.id: values[f.id] for f in source.figures if f.route == "replay" and f.id in values}
    derived = _derived(source, replayed) if replayed else {}
    own = _derived(source, {f.id: f.value for f in source.figures if f.route == "replay"})
    out: dict[str, Outcome] = {}
    for fig in source.figures:
        if fig.route == "replay" and fig.id in values:
            out[fig.id] = Outcome(values[fig.id])
        elif fig.route == "derived":
            note = _own_note(fig, own.get(fig.id))
            out[fig.id] = Outcome(derived.get(fig.id), note=note)
        elif fig.route == "release":
            if fig.id in values:
                out[fig.id] = Outcome(values[fig.id])
            elif fig.id in unavailable:
                out[fig.id] = Outcome(cannot=unavailable[fig.id])
    return out


def _own_note(fig: Figure, own: float | None) -> str:
    """What the card's own printed tables give for a claim about its printed values, when they contradict it."""
    if own is None or not fig.from_printed or fig.reproduced(own):
        return ""
    return f"the card's own printed tables give {fig.here_text(own)}"

"""Where the rcp-ndcg-vidore-v3 release lives and how its files are read.

Layout (mteb-style, one config per subset `{domain}__{language}`, split `test`):
`{subset}/corpus.parquet`, `{subset}/queries.parquet`, `{subset}/qrels.parquet` (`query-id`,
`corpus-id`, `score` int, `gain` float, `theta` float, null for rows outside the judged pool),
`{subset}/top_ranked.parquet` (`query-id`, `corpus-ids` list), `provenance/runs/{domain}.parquet`
(`model`, `is_judge`, `query-id`, `corpus-id`, `score`, ...), `provenance/first_stage/{subset}.parquet`
(`query-id`, `retriever`, `corpus-id`, `rank`, `score`) and `provenance/item_params.qwen35.json`.
Files are fetched one by one with `huggingface_hub` at a pinned revision (honouring HF_ENDPOINT,
HF_HOME and HF_HUB_OFFLINE), or read from a local snapshot folder in the same layout.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, DataError, UsageError, choices

REPO = "fabianschmidt-cohere/rcp-ndcg-vidore-v3"
# Release tag -> commit. v1: the revision the card and mteb's Vidore3*RCPReranking tasks pin for
# release 1 (data commit adb6a2a8). v2: the revision cohere-ai/rcp-ndcg's paper-reproduction code
# pins (experiments/fetch_data.py). See benchmarks/vidore-v3-rcp.toml for how these were found.
RELEASES = {
    "v1-nvidia-qwen3.5-397b-a17b-nvfp4": "b22323345cb5639944600d490969bcce9fba7943",
    "v2-nvidia-qwen3.5-397b-a17b-nvfp4": "4e5ca46e2f9c050b18a7f170c23e3ade66f78a4e",
}
CURRENT_RELEASE = "v2-nvidia-qwen3.5-397b-a17b-nvfp4"
# Each domain's questions were written in one language; the paper scores those (native view).
NATIVE_LANGUAGE = {
    "computer_science": "english",
    "energy": "french",
    "finance_en": "english",
    "finance_fr": "french",
    "hr": "english",
    "industrial": "english",
    "pharmaceuticals": "english",
    "physics": "french",
}
DOMAINS = tuple(NATIVE_LANGUAGE)
LANGUAGES = ("english", "french", "german", "italian", "portuguese", "spanish")
SUBSETS = tuple(f"{d}__{lang}" for d in DOMAINS for lang in LANGUAGES)
ITEM_PARAMS = "provenance/item_params.qwen35.json"
FIRST_STAGE_ORDER = ("embed_v4", "bm25", "octen")
_SHA = re.compile(r"^[0-9a-f]{40}$")


def split_subset(name: str) -> tuple[str, str]:
    domain, sep, language = name.partition("__")
    if not sep or domain not in NATIVE_LANGUAGE or language not in LANGUAGES:
        raise UsageError(f"unknown rcp subset '{name}'", "subsets are {domain}__{language}, e.g. hr__english")
    return domain, language


def resolve_revision(revision: str | None, releases: dict[str, str] | None = None) -> str:
    """A release tag (or `v1`/`v2`) maps to its pinned sha; a full sha or branch passes through."""
    releases = releases or RELEASES
    if revision is None:
        return releases[CURRENT_RELEASE] if CURRENT_RELEASE in releases else next(iter(releases.values()))
    if revision in releases:
        return releases[revision]
    short = {tag.split("-", 1)[0]: sha for tag, sha in releases.items()}
    if revision in short:
        return short[revision]
    return revision


@dataclass
class Release:
    """One revision of the release, read from the Hub or from a local snapshot folder."""

    repo: str = REPO
    revision: str | None = None
    snapshot: Path | None = None

    def __post_init__(self) -> None:
        self.revision = resolve_revision(self.revision)

    @property
    def label(self) -> str:
        return f"{self.repo}@{self.revision}"

    def path(self, relpath: str) -> Path:
        """Local path of one release file (downloaded into the Hub cache on first use)."""
        if self.snapshot is not None:
            path = Path(self.snapshot) / relpath
            if not path.is_file():
                raise DataError(
                    f"{path}: file not found in the snapshot of {self.repo}",
                    "the snapshot must keep the release's layout (e.g. hr__english/qrels.parquet)",
                )
            return path
        return _download(self.repo, relpath, self.revision)

    def table(self, relpath: str, columns: tuple[str, ...]) -> dict[str, list]:
        """Read a parquet file into columns, checking the columns the caller needs."""
        import pyarrow.parquet as pq

        path = self.path(relpath)
        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for damaged files
            raise DataError(
                f"{self.label}/{relpath}: not a readable parquet file ({exc})", "delete the cached file and rerun"
            ) from None
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            raise DataError(
                f"{self.label}/{relpath}: missing column(s) {', '.join(missing)}",
                f"found {choices(table.column_names)}; pick a revision of the rcp-ndcg release",
            )
        return table.to_pydict()

    def item_params(self) -> list[tuple[float, float]]:
        return parse_item_params(self.path(ITEM_PARAMS))


def _download(repo: str, relpath: str, revision: str) -> Path:
    """One file at one revision through the Hub cache; the same probe and errors as the Hub loaders."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    from ..benchmarks import hub

    if hub.offline():
        if not _SHA.fullmatch(revision):
            raise ConfigurationError(
                f"HF_HUB_OFFLINE=1 needs a full commit sha to load {repo}, got '{revision}'",
                f"use a release tag ({choices(RELEASES)}) or unset HF_HUB_OFFLINE",
            )
        commit = revision
    else:
        commit = hub.resolve_revision(repo, revision)
    try:
        return Path(hf_hub_download(repo, relpath, repo_type="dataset", revision=commit))
    except EntryNotFoundError:
        raise DataError(f"{repo}@{commit}: no file {relpath}", "check the subset name and the revision") from None
    except LocalEntryNotFoundError:
        raise ConfigurationError(
            f"{repo}@{commit}/{relpath} is not in the offline cache and HF_HUB_OFFLINE=1 is set",
            "download it once with network access, or pass --snapshot with a local copy of the release",
        ) from None
    except Exception as exc:
        if hub._is_network_error(exc):
            raise hub.unreachable(repo, commit, type(exc).__name__) from None
        raise


def parse_item_params(path: Path) -> list[tuple[float, float]]:
    """The five criteria's (gamma, beta): discrimination and difficulty of the 2PL model.

    Accepts `{"items": [{"gamma": g, "beta": b}, ...]}`, a bare list of such objects, or
    `{"gamma": [...], "beta": [...]}` (also `a`/`b` or `discrimination`/`difficulty`).
    """
    try:
        raw: Any = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not readable JSON ({exc})", "re-download the item parameters") from None
    names = (("gamma", "beta"), ("a", "b"), ("discrimination", "difficulty"))

    def pick(obj: dict) -> tuple[Any, Any] | None:
        for g, b in names:
            if g in obj and b in obj:
                return obj[g], obj[b]
        return None

    params: list[tuple[float, float]] = []
    if isinstance(raw, dict) and pick(raw) and isinstance(pick(raw)[0], list):
        gammas, betas = pick(raw)
        params = list(zip(gammas, betas))
    else:
        items = raw.get("items", raw.get("criteria")) if isinstance(raw, dict) else raw
        if isinstance(items, dict):
            items = list(items.values())
        for item in items or []:
            found = pick(item) if isinstance(item, dict) else None
            if found is None:
                params = []
                break
            params.append(found)
    try:
        params = [(float(g), float(b)) for g, b in params]
    except (TypeError, ValueError):
        params = []
    if (
        not params
        or any(not (math.isfinite(g) and math.isfinite(b)) for g, b in params)
        or sum(g for g, _ in params) <= 0
    ):
        raise DataError(
            f"{path}: no usable item parameters",
            "expected gamma/beta (discrimination/difficulty) per criterion, gammas summing > 0",
        )
    return params


def gain(theta: float, params: list[tuple[float, float]]) -> float:
    """The release's link: gain(θ) = Σ γ_k σ(γ_k (θ − β_k)) / Σ γ_k, in (0, 1)."""
    total = 0.0
    for gamma, beta in params:
        z = gamma * (theta - beta)
        sigma = 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))
        total += gamma * sigma
    return total / sum(g for g, _ in params)

"""Where the rcp-ndcg-vidore-v3 release lives and how its files are read.

The release is read the way its dataset card says, through the card's YAML `configs` (what
`datasets.load_dataset` and mteb read): per subset `{domain}__{language}` the configs `-corpus`,
`-queries`, `-qrels` and `-top_ranked` (split `test`); the six languages of a domain name one shared
corpus. The provenance configs are split by domain: `provenance-runs` (`model`, `is_judge`, `query-id`,
`corpus-id`, `score`), `provenance-first-stage` (`query-id`, `retriever`, `corpus-id`, `rank`,
`score`) and `provenance-pool` (`query-id`, `corpus-id`, `gt_injected`: whether the ground-truth rule
put that page into the judged pool). A table the card does not declare is read from its conventional
path (`{subset}/{part}.parquet`, `provenance/{runs,first_stage,pool}/{domain}.parquet`), the layout
cohere-ai/rcp-ndcg's `experiments/fetch_data.py` fetches. Release tags (`v1-...`, `v2-...`, or just
`v1`) resolve through the release's own `provenance/releases.json`, never a table kept here.

Files are fetched one by one with `huggingface_hub` at one commit (honouring HF_ENDPOINT, HF_HOME and
HF_HUB_OFFLINE), or read from a local snapshot folder in the same layout.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import ConfigurationError, DataError, UsageError, choices

REPO = "fabianschmidt-cohere/rcp-ndcg-vidore-v3"
# The commit read when no revision is given: the one cohere-ai/rcp-ndcg's paper checks pin
# (experiments/fetch_data.py, "the revision the published checks were run against"); its
# provenance/releases.json names it v2-nvidia-qwen3.5-397b-a17b-nvfp4.
PINNED_REVISION = "4e5ca46e2f9c050b18a7f170c23e3ade66f78a4e"
RELEASES_FILE = "provenance/releases.json"
SPLIT = "test"
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
# Provenance config -> the folder of its conventional per-domain files.
PROVENANCE = {"provenance-runs": "runs", "provenance-first-stage": "first_stage", "provenance-pool": "pool"}
_SHA = re.compile(r"^[0-9a-f]{40}$")


def split_subset(name: str) -> tuple[str, str]:
    domain, sep, language = name.partition("__")
    if not sep or domain not in NATIVE_LANGUAGE or language not in LANGUAGES:
        raise UsageError(f"unknown rcp subset '{name}'", "subsets are {domain}__{language}, e.g. hr__english")
    return domain, language


def parse_releases(text: str, where: str) -> dict[str, str]:
    """Tag -> commit from `provenance/releases.json`.

    Accepts `{"releases": [{"tag": ..., "commit": ...}, ...]}` (also `name`/`revision`/`sha` keys), a
    bare list of such objects, or a plain `{tag: commit}` object.
    """
    try:
        raw: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: not valid JSON ({exc})", "pick another revision of the release") from None
    entries = raw.get("releases", raw) if isinstance(raw, dict) else raw
    tags: dict[str, str] = {}
    if isinstance(entries, dict):
        tags = {str(k): str(v) for k, v in entries.items() if isinstance(v, str)}
    elif isinstance(entries, list):
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            tag = entry.get("tag") or entry.get("name")
            commit = entry.get("commit") or entry.get("revision") or entry.get("sha")
            if isinstance(tag, str) and isinstance(commit, str):
                tags[tag] = commit
    if not tags or any(not _SHA.fullmatch(c) for c in tags.values()):
        raise DataError(f"{where}: no release tags with full commit shas", "pick another revision of the release")
    return tags


def resolve_tag(revision: str, releases: dict[str, str]) -> str | None:
    """The commit of a release tag or of its unique short form (`v1` for `v1-...`); None if unknown."""
    if revision in releases:
        return releases[revision]
    short = [sha for tag, sha in releases.items() if tag.split("-", 1)[0] == revision]
    return short[0] if len(short) == 1 else None


@dataclass
class Release:
    """One revision of the release, read from the Hub or from a local snapshot folder.

    `revision`: None (the pinned commit), a full sha, or a tag from the release's `releases.json`.
    """

    repo: str = REPO
    revision: str | None = None
    snapshot: Path | None = None
    requested: str | None = field(default=None, init=False)
    _card: dict[str, Any] | None = field(default=None, init=False, repr=False)
    _listing: list[str] | None = field(default=None, init=False, repr=False)
    # The last provenance table read: the pool check reads one domain's table for each of its six subsets.
    _last: tuple[tuple, dict[str, list] | None] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.requested = self.revision
        self.revision = self._resolve(self.revision)

    @property
    def label(self) -> str:
        return f"{self.repo}@{self.revision}"

    # -- revisions ---------------------------------------------------------------------------
    def releases(self) -> dict[str, str]:
        """The release's own tag -> commit table (`provenance/releases.json`)."""
        if self.snapshot is not None:
            path = self._snapshot_path(RELEASES_FILE)
            return parse_releases(path.read_text(encoding="utf-8"), str(path))
        from . import hub

        # Online the newest list (on main) also knows tags made after the pin; offline the pinned copy.
        where = PINNED_REVISION if hub.offline() else "main"
        path = _download(self.repo, RELEASES_FILE, where)
        return parse_releases(path.read_text(encoding="utf-8"), f"{self.repo}@{where}/{RELEASES_FILE}")

    def _resolve(self, revision: str | None) -> str:
        if revision is None:
            return PINNED_REVISION
        if _SHA.fullmatch(revision):
            return revision
        commit = resolve_tag(revision, self.releases())
        if commit is not None:
            return commit
        if self.snapshot is not None:
            raise UsageError(
                f"--revision {revision} is not a release of {self.snapshot}",
                f"choose from {choices(self.releases())}, or a full commit sha",
            )
        return revision  # a branch or git tag of the repo: the Hub resolves it (or says it does not exist)

    # -- the card's configs ------------------------------------------------------------------
    def card(self) -> dict[str, Any]:
        """The card's YAML header (`{}` without a card)."""
        if self._card is None:
            from .hub import parse_card

            path: Path | None
            if self.snapshot is not None:
                candidate = Path(self.snapshot) / "README.md"
                path = candidate if candidate.is_file() else None
            else:
                path = self._fetch_optional("README.md")
            text = path.read_text(encoding="utf-8") if path is not None else ""
            self._card = parse_card(text, f"{self.label}/README.md") or {}
        return self._card

    def config_files(self, config: str, split: str, fallback: str, *, optional: bool = False) -> list[str]:
        """The files holding one split of one config: the card's `data_files`, else the fallback path.

        With `optional`, a table the release does not have is `[]` instead of an error.
        """
        patterns = _data_files(self.card(), config, split)
        if patterns is None:
            if optional and not self._exists(fallback):
                return []
            return [fallback]
        files: list[str] = []
        for pattern in patterns:
            if any(ch in pattern for ch in "*?["):
                matched = sorted(f for f in self._files() if fnmatch.fnmatch(f, pattern))
                if not matched:
                    raise DataError(
                        f"{self.label}: no file matches {pattern} (config {config}, split {split})",
                        "the card names files this revision does not have; pick another revision",
                    )
                files.extend(matched)
            else:
                files.append(pattern)
        return files

    def read(
        self, config: str, split: str, fallback: str, columns: tuple[str, ...], *, optional: bool = False
    ) -> dict[str, list] | None:
        """One config/split as columns (its files concatenated); None for a missing optional table."""
        files = self.config_files(config, split, fallback, optional=optional)
        if not files:
            return None
        out: dict[str, list] = {}
        for relpath in files:
            for name, values in self.table(relpath, columns).items():
                out.setdefault(name, []).extend(values)
        return out

    def subset_table(self, subset: str, part: str, columns: tuple[str, ...]) -> dict[str, list]:
        """`{subset}-{part}` (corpus, queries, qrels, top_ranked) at split `test`."""
        table = self.read(f"{subset}-{part}", SPLIT, f"{subset}/{part}.parquet", columns)
        assert table is not None
        return table

    def provenance(
        self, config: str, domain: str, columns: tuple[str, ...], *, optional: bool = False
    ) -> dict[str, list] | None:
        """One domain of a provenance config (runs, first stage, pool)."""
        key = (config, domain, columns, optional)
        if self._last is None or self._last[0] != key:
            fallback = f"provenance/{PROVENANCE[config]}/{domain}.parquet"
            self._last = (key, self.read(config, domain, fallback, columns, optional=optional))
        return self._last[1]

    # -- files -------------------------------------------------------------------------------
    def path(self, relpath: str) -> Path:
        """Local path of one release file (downloaded into the Hub cache on first use)."""
        if self.snapshot is not None:
            return self._snapshot_path(relpath)
        assert self.revision is not None
        return _download(self.repo, relpath, self.revision)

    def _snapshot_path(self, relpath: str) -> Path:
        assert self.snapshot is not None
        path = Path(self.snapshot) / relpath
        if not path.is_file():
            raise DataError(
                f"{path}: file not found in the snapshot of {self.repo}",
                "the snapshot must keep the release's layout (e.g. hr__english/qrels.parquet)",
            )
        return path

    def _fetch_optional(self, relpath: str) -> Path | None:
        try:
            return self.path(relpath)
        except DataError:
            return None

    def _exists(self, relpath: str) -> bool:
        if self.snapshot is not None:
            return (Path(self.snapshot) / relpath).is_file()
        return relpath in self._files()

    def _files(self) -> list[str]:
        """Every file of the revision (the snapshot's, the Hub's listing, or offline the cached ones)."""
        if self._listing is None:
            if self.snapshot is not None:
                root = Path(self.snapshot)
                self._listing = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
            else:
                assert self.revision is not None
                self._listing = _list_files(self.repo, self.revision)
        return self._listing

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
        from .rcp_gain import parse_item_params

        return parse_item_params(self.path(ITEM_PARAMS))


def _data_files(card: dict[str, Any], config: str, split: str) -> list[str] | None:
    """The path patterns a card's `configs` entry gives one split; None when the card does not declare it."""
    for entry in card.get("configs") or []:
        if not isinstance(entry, dict) or entry.get("config_name") != config:
            continue
        data_files = entry.get("data_files")
        if isinstance(data_files, str):
            return [data_files] if split == SPLIT else None
        for item in data_files or []:
            if isinstance(item, dict) and item.get("split") == split:
                path = item.get("path")
                return [path] if isinstance(path, str) else [str(p) for p in path or []]
        return None
    return None


def _offline_or_commit(repo: str, revision: str) -> str:
    from . import hub

    if hub.offline():
        if not _SHA.fullmatch(revision):
            raise ConfigurationError(
                f"HF_HUB_OFFLINE=1 needs a full commit sha to load {repo}, got '{revision}'",
                "pass a full sha (or a release tag, resolved from the cached releases.json), or unset HF_HUB_OFFLINE",
            )
        return revision
    return hub.resolve_revision(repo, revision)


def _list_files(repo: str, revision: str) -> list[str]:
    """The files of one revision: the Hub's listing, or offline those in the local Hub cache."""
    from . import hub

    commit = _offline_or_commit(repo, revision)
    if hub.offline():
        from huggingface_hub import constants

        root = Path(constants.HF_HUB_CACHE) / f"datasets--{repo.replace('/', '--')}" / "snapshots" / commit
        if not root.is_dir():  # nothing of this revision was ever downloaded: every subset would miss its files
            raise ConfigurationError(
                f"{repo}@{commit} is not in the offline cache and HF_HUB_OFFLINE=1 is set",
                "download it once with network access, or pass --snapshot with a local copy of the release",
            )
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    from huggingface_hub import HfApi

    try:
        return sorted(HfApi().list_repo_files(repo, repo_type="dataset", revision=commit))
    except Exception as exc:
        if hub._is_network_error(exc):
            raise hub.unreachable(repo, commit, type(exc).__name__) from None
        raise


def _download(repo: str, relpath: str, revision: str) -> Path:
    """One file at one revision through the Hub cache; the same probe and errors as the Hub loaders."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    from . import hub

    commit = _offline_or_commit(repo, revision)
    try:
        return Path(hf_hub_download(repo, relpath, repo_type="dataset", revision=commit))
    except LocalEntryNotFoundError:  # first: it is a subclass of EntryNotFoundError
        raise ConfigurationError(
            f"{repo}@{commit}/{relpath} is not in the offline cache and HF_HUB_OFFLINE=1 is set",
            "download it once with network access, or pass --snapshot with a local copy of the release",
        ) from None
    except EntryNotFoundError:
        raise DataError(f"{repo}@{commit}: no file {relpath}", "check the subset name and the revision") from None
    except Exception as exc:
        if hub._is_network_error(exc):
            raise hub.unreachable(repo, commit, type(exc).__name__) from None
        raise

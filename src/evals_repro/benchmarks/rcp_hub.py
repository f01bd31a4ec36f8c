"""The rcp-ndcg release's card configs and Hub files: which files a config names, and fetching them.

Beside `rcp_release.Release`, which reads through these: a card's `configs` entry gives a config's files per split;
one revision's files come from the Hub cache (downloaded on first use, honouring HF_HUB_OFFLINE) or its listing.
A parsed card is kept per file (path, size, mtime): every subset a run loads reads the same card.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..base.errors import ConfigurationError, DataError

SPLIT = "test"
_SHA = re.compile(r"^[0-9a-f]{40}$")
_CARDS: dict[tuple[str, int, int], dict[str, Any]] = {}


def read_card(path: Path | None, where: str) -> dict[str, Any]:
    """The card's YAML header (`{}` without a card), parsed once per file version (callers never change it)."""
    from .hub import parse_card

    if path is None:
        return {}
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _CARDS:
        if len(_CARDS) > 16:
            _CARDS.clear()
        _CARDS[key] = parse_card(path.read_text(encoding="utf-8"), where) or {}
    return _CARDS[key]


def data_files(card: dict[str, Any], config: str, split: str) -> list[str] | None:
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


def declared_splits(card: dict[str, Any], config: str) -> list[str] | None:
    """The splits a card's `configs` entry declares for a config; None when it has no such entry."""
    for entry in card.get("configs") or []:
        if isinstance(entry, dict) and entry.get("config_name") == config:
            data_files = entry.get("data_files")
            if isinstance(data_files, str):
                return [SPLIT]
            return [str(item["split"]) for item in data_files or [] if isinstance(item, dict) and "split" in item]
    return None


def offline_or_commit(repo: str, revision: str) -> str:
    from . import hub

    if hub.offline():
        if not _SHA.fullmatch(revision):
            raise ConfigurationError(
                f"HF_HUB_OFFLINE=1 needs a full commit sha to load {repo}, got '{revision}'",
                "pass a full sha (or a release tag, resolved from the cached releases.json), or unset HF_HUB_OFFLINE",
            )
        return revision
    return hub.resolve_revision(repo, revision)


def list_files(repo: str, revision: str) -> list[str]:
    """The files of one revision: the Hub's listing, or offline those in the local Hub cache."""
    from . import hub

    commit = offline_or_commit(repo, revision)
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


def download(repo: str, relpath: str, revision: str) -> Path:
    """One file at one revision through the Hub cache; the same probe and errors as the Hub loaders."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    from . import hub

    commit = offline_or_commit(repo, revision)
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

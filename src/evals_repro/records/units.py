"""A result unit's place and fate: where it lives, the setting it answers, what `--resume` decides about it.

Its paths (`result_path`, `run_paths`, the portable method folders and their migration), the `Setting` a
result was computed in, and the resume vocabulary (`Coverage` asked of a result, the `Verdict` and `Action`
`ResultRecord.covers` answers). Nothing here needs pydantic, so a refusal that stops before any result is
read (a missing key, a bad option) imports this and never the record's models (`records.results`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..base.errors import DataError

if TYPE_CHECKING:
    from ..metrics.protocol import ScoringProtocol


class Setting(StrEnum):
    MONOLINGUAL = "monolingual"
    CROSSLINGUAL = "crosslingual"


class Action(StrEnum):
    KEEP = "keep"
    RESCORE = "rescore"
    RERUN = "rerun"


@dataclass(frozen=True)
class Verdict:
    action: Action
    reason: str = ""

    @classmethod
    def keep(cls) -> Verdict:
        return cls(Action.KEEP)

    @classmethod
    def rescore(cls, reason: str) -> Verdict:
        return cls(Action.RESCORE, reason)

    @classmethod
    def rerun(cls, reason: str) -> Verdict:
        return cls(Action.RERUN, reason)


@dataclass(frozen=True)
class Coverage:
    """What a run asks of a subset's result, compared field by field by `ResultRecord.covers`."""

    setting: Setting
    pipeline: dict[str, Any]
    options: dict[str, Any]
    top_k: int
    revision: str | None
    data_digest: str
    protocol: ScoringProtocol


# -- paths ---------------------------------------------------------------------------------------------

# Characters a method label keeps in its folder name: every other one (`:` of `rrf:` and `reranker:model`, the
# `/` of a Hub model id, `%` itself) is percent-encoded, so the name is valid on Windows and in sync tools and
# maps back to exactly one label (`method_of_folder`). Letters, digits and `_.-~` are always kept.
FOLDER_SAFE: Final = "+@[],="


def method_folder(label: str) -> str:
    """The portable folder name of a method label: `rrf:bm25+minilm` -> `rrf%3Abm25+minilm`."""
    from urllib.parse import quote

    return quote(label, safe=FOLDER_SAFE)


def method_of_folder(name: str) -> str:
    """The method label a results folder holds (the inverse of `method_folder`)."""
    from urllib.parse import unquote

    return unquote(name)


def result_path(results_dir: Path, benchmark: str, label: str, subset: str) -> Path:
    return Path(results_dir) / benchmark / method_folder(label) / f"{subset}.json"


def migrate_method_folder(results_dir: Path, benchmark: str, label: str) -> str | None:
    """Results an earlier version wrote under the label itself (`rrf:bm25+minilm/`) are moved to the portable
    name, so `--resume` finds them; returns what was done, for the user, or None when there was nothing to do."""
    root = Path(results_dir) / benchmark
    old, new = root / label, root / method_folder(label)  # a `/` in the label made `old` nested
    if old == new or not old.is_dir():
        return None
    if new.exists():
        return (
            f"note: {old} holds results of {label} under its old folder name; {new} is used, "
            f"move what you need from the old folder into it"
        )
    try:
        os.rename(old, new)
    except OSError as exc:
        return f"note: could not rename {old} to {new} ({exc.strerror}); rename it yourself to reuse its results"
    for parent in old.parents:
        if parent == root or not parent.is_relative_to(root):
            break
        try:
            parent.rmdir()  # the folders a `/` in the label created, once empty
        except OSError:
            break
    return f"moved {old} to {new} (portable folder name: no ':' or '/')"


def run_paths(path: Path) -> tuple[Path, Path, Path]:
    """The saved run, qrels and gains beside a result file."""
    stem = Path(path).name.removesuffix(".json")
    return tuple(Path(path).with_name(f"{stem}.{kind}.gz") for kind in ("run", "qrels", "gains"))  # type: ignore[return-value]


class DamagedResult(DataError):
    """A result file that exists but does not validate (torn, hand-edited, wrong types)."""


RERUN_HINT: Final = "rerun that subset with `run ... --resume`, which recomputes it in place"

"""Which plugins and Python objects made a benchmark's results: the HTML provenance rows and `report`'s notes.

A method's scores are comparable across its subsets (and its `avg` means something) only when one identity of
each of its components (base/identity.py: distribution, version, describe(), sources) made them all. Results of
one method made by different identities (an upgrade, an edit or a new describe() between subsets) are named in
one note per component, and the HTML lists every component with what identifies it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base.identity import OBJECT_GROUP, identity_key, identity_tag, installed_text
from ..records.results import ResultRecord

HEADER = ("method", "component", "distribution", "version", "installed", "sources", "describe()", "identity", "subsets")


@dataclass
class ComponentRow:
    """One identity of one component of a method, and the subsets it made."""

    method: str
    name: str
    recorded: dict[str, Any]
    subsets: list[str] = field(default_factory=list)

    def cells(self) -> tuple[str, ...]:
        import json

        recorded = self.recorded
        how = "Python object" if recorded.get("group") == OBJECT_GROUP and not recorded.get("distribution") else None
        return (
            self.method,
            self.name,
            str(recorded.get("distribution") or "-"),
            str(recorded.get("version") or "-"),
            how or installed_text(recorded.get("install")),
            str(recorded.get("sources") or "-"),
            json.dumps(recorded["describe"], sort_keys=True) if "describe" in recorded else "(not recorded)",
            identity_key(recorded)[:12],
            ", ".join(self.subsets),
        )


def component_rows(results: Sequence[ResultRecord]) -> list[ComponentRow]:
    """Per method and component, one row per identity that made some of its results (subsets in name order)."""
    rows: dict[tuple[str, str, str], ComponentRow] = {}
    for record in sorted(results, key=lambda r: (r.method, r.subset)):
        for name, recorded in sorted(record.components().items()):
            key = (record.method, name, identity_key(recorded))
            row = rows.setdefault(key, ComponentRow(record.method, name, recorded))
            if record.subset not in row.subsets:
                row.subsets.append(record.subset)
    return list(rows.values())


def mixed_identity_notes(results: Sequence[ResultRecord]) -> list[str]:
    """One note per method component whose results were made by more than one identity."""
    by_component: dict[tuple[str, str], list[ComponentRow]] = {}
    for row in component_rows(results):
        by_component.setdefault((row.method, row.name), []).append(row)
    notes = []
    for (method, name), rows in by_component.items():
        if len(rows) < 2:
            continue
        made = "; ".join(f"{', '.join(row.subsets)} by {identity_tag(row.recorded)}" for row in rows)
        notes.append(
            f"{method}: its subsets were made by {len(rows)} identities of {name} ({made}): its rows mix them "
            f"(rerun with `run {method} --resume`, which recomputes those of another identity)"
        )
    return notes

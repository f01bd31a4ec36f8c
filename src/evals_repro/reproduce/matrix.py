"""The reproduction matrix: per figure its status, what was computed here, the difference, and what to do next.

Statuses: `reproduced` (within half a unit of the last printed digit), `differs` (with the difference), `not run`
(with the command; for paid work the plan's cost), `cannot run here` (what it needs: a key, a GPU, data that is
not public); an anchor's figure of other settings is a `reference`: shown beside ours, never counted.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field

from .figures import Figure, Source

REPRODUCED, DIFFERS, NOT_RUN, CANNOT, REFERENCE = "reproduced", "differs", "not run", "cannot run here", "reference"
STATUSES = (REPRODUCED, DIFFERS, NOT_RUN, CANNOT, REFERENCE)
# The columns of `-o matrix.csv` and the keys of each figure in `-o matrix.json`.
FIELDS = (
    "source", "id", "section", "figure", "where", "statement", "reading", "benchmark", "measure", "view", "tie_rule",
    "revision", "unit", "decimals", "relation", "published", "published_high", "printed", "here", "difference",
    "status", "detail", "command",
)  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    """What a source's computation says of one figure: a value, or why there is none."""

    value: float | None = None
    not_run: str | None = None  # the command (and cost) that would compute it
    cannot: str | None = None  # what running it here lacks
    note: str = ""  # said beside the status (the source's own tables, the revision read, ...)


@dataclass
class Row:
    figure: Figure
    status: str
    here: float | None = None
    detail: str = ""

    def as_dict(self) -> dict:
        fig = self.figure
        return {
            "source": fig.source,
            "id": fig.id,
            "section": fig.section,
            "figure": fig.label,
            "where": fig.where,
            "statement": fig.statement,
            "reading": fig.reading,
            "benchmark": fig.benchmark,
            "measure": fig.measure,
            "view": fig.view,
            "tie_rule": fig.tie_rule,
            "revision": fig.revision,
            "unit": fig.unit,
            "decimals": fig.decimals,
            "relation": fig.relation,
            "published": fig.value,
            "published_high": fig.high,
            "printed": fig.published_text(),
            "here": self.here,
            "difference": None if self.here is None else fig.difference(self.here),
            "status": self.status,
            "detail": self.detail,
            "command": fig.command,
        }


def judge(figure: Figure, outcome: Outcome | None, default_not_run: str) -> Row:
    """The row of one figure, from what its source computed (None: nothing, say how to compute it)."""
    outcome = outcome or Outcome()
    notes = [outcome.note] if outcome.note else []
    if figure.reference is not None:
        extra = [] if outcome.value is not None else [outcome.cannot or outcome.not_run or default_not_run]
        detail = "; ".join([f"other settings: {figure.reference}", *extra, *notes])
        return Row(figure, REFERENCE, outcome.value, detail)
    if figure.needs:
        nearest = (
            [f"nearest here: `{figure.nearest}` (the public datasets: not the same figure)"] if figure.nearest else []
        )
        return Row(figure, CANNOT, None, "; ".join(["needs " + "; ".join(figure.needs), *nearest, *notes]))
    if outcome.value is None:
        if outcome.cannot:
            return Row(figure, CANNOT, None, "; ".join([f"needs {outcome.cannot}", *notes]))
        return Row(figure, NOT_RUN, None, "; ".join([outcome.not_run or default_not_run, *notes]))
    if figure.reproduced(outcome.value):
        return Row(figure, REPRODUCED, outcome.value, "; ".join(notes))
    by = f"by {figure.difference_text(outcome.value)}" + (
        f" {figure.unit}" if figure.unit and figure.relation != "<" else ""
    )
    return Row(figure, DIFFERS, outcome.value, "; ".join([by, *notes]))


@dataclass
class Matrix:
    sources: list[Source]
    rows: list[Row] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(row.status == status for row in self.rows)

    @property
    def checked(self) -> int:
        return sum(row.status != REFERENCE for row in self.rows)

    def summary(self) -> str:
        """One line: N of M reproduced, and what the others are."""
        parts = [f"{self.count(s)} {s if s != DIFFERS else 'differ'}" for s in (DIFFERS, NOT_RUN, CANNOT)]
        line = f"{self.count(REPRODUCED)} of {self.checked} reproduced ({', '.join(parts)})"
        references = self.count(REFERENCE)
        if references:
            line += f"; {references} reference figure{'s' if references != 1 else ''} shown, not checked"
        return line

    def markdown(self, level: int = 2) -> str:
        """Per source a heading (`level`), then per section a table of its figures; the summary line last."""
        h1, h2 = "#" * level, "#" * (level + 1)
        lines: list[str] = []
        for source in self.sources:
            rows = [r for r in self.rows if r.figure.source == source.name]
            revision = f", data revision {source.revision[:8]}" if source.revision else ""
            tag = f" ({source.revision_tag})" if source.revision_tag else ""
            lines += [f"{h1} {source.name}: {source.title}", "", f"Source: {source.citation}{revision}{tag}.", ""]
            counts = ", ".join(
                f"{sum(r.status == s for r in rows)} {s}" for s in STATUSES if any(r.status == s for r in rows)
            )
            lines += [f"{len(rows)} figures: {counts}.", ""]
            for section in dict.fromkeys(r.figure.section for r in rows):
                lines += [f"{h2} {section}", "", "| figure | published | here | difference | status | detail |"]
                lines.append("|---|---:|---:|---:|---|---|")
                for row in (r for r in rows if r.figure.section == section):
                    fig = row.figure
                    here = "" if row.here is None else fig.here_text(row.here)
                    diff = "" if row.here is None else fig.difference_text(row.here)
                    cells = [fig.label, fig.published_text() + (f" {fig.unit}" if fig.unit else ""), here, diff]
                    cells = [c.replace("|", "\\|").replace("\n", " ") for c in [*cells, row.status, row.detail]]
                    lines.append("| " + " | ".join(cells) + " |")
                lines.append("")
        lines.append(self.summary())
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=FIELDS)
        writer.writeheader()
        for row in self.rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.as_dict().items()})
        return buffer.getvalue()

    def as_json(self) -> str:
        summary = {status: self.count(status) for status in STATUSES} | {"checked": self.checked}
        doc = {
            "summary": summary,
            "line": self.summary(),
            "sources": [
                {"name": s.name, "title": s.title, "citation": s.citation, "revision": s.revision} for s in self.sources
            ],
            "figures": [row.as_dict() for row in self.rows],
        }
        return json.dumps(doc, indent=1, allow_nan=False) + "\n"

    def html_section(self) -> str:
        """The matrix as an HTML fragment (the HTML report's section, and the body of `-o matrix.html`)."""
        from ..reporting.html_report import markdown_to_html

        return markdown_to_html(self.markdown(level=3))

    def html(self) -> str:
        from ..reporting.html_report import page

        return page("evals-repro reproduce: published figures", self.markdown(), [], [])

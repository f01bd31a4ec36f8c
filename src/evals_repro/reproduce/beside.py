"""`report --published`: the sources' printed figures as rows beside the user's own methods.

A row joins a report table only where the same benchmark, measure and view apply: the rcp-ndcg card's cells join
vidore-v3-rcp's native-language and 6-language views (RCP-nDCG@10 under the report's tie rule as
`ndcg_float_at_10`; qrel-nDCG@10 under rule (a), trec_eval's order, as `ndcg_at_10`), an anchor's per-dataset
figures join the monolingual subset table. Rows are added after the comparisons and plots are made: a printed figure
has no per-query scores, so it gets no interval, marker or p-value. Results of another data revision than the
figures' are refused by name.
"""

from __future__ import annotations

from ..records.results import ResultRecord
from ..reporting.report import Table
from .figures import Figure, Source, load_sources, table_id
from .rcp_claims import MEAN
from .rerun import check_revision

# report measure -> (card metric, the tie rule it is ranked by; None: the report's own --tie-rule)
CARD_MEASURES = {"ndcg_float_at_10": ("rcp_ndcg_at_10", None), "ndcg_at_10": ("qrel_ndcg_at_10", "doc-id")}


def _view(table: Table) -> str | None:
    """native / mean6 from what each domain column averages (one native subset, or six languages); None otherwise."""
    domains = [c for c in table.columns if c != MEAN]
    if table.columns[-1:] != [MEAN] or not domains or any(c not in table.sources for c in domains):
        return None
    sizes = {len(table.sources[c]) for c in domains}
    return "native" if sizes == {1} else ("mean6" if sizes == {6} else None)


def _card_rows(source: Source, table: Table, tie_rule: str | None) -> list[tuple[str, list[float | None]]]:
    view = _view(table)
    if view is None or table.measure not in CARD_MEASURES:
        return []
    metric, fixed = CARD_MEASURES[table.measure]
    rule = fixed or tie_rule
    if rule is None:  # `report` without a tie rule mixes results of both: no printed cell is of them
        return []
    figures = {f.id: f for f in source.figures if f.route == "replay"}
    rows = []
    for reranker in dict.fromkeys(f.label.split(", ")[0] for f in figures.values()):
        cells = [figures.get(table_id(view, metric, rule, reranker, column)) for column in table.columns]
        if any(c is not None for c in cells):
            values = [None if c is None else c.value / 100 for c in cells]
            rows.append((f"{reranker} (published: {source.name})", values))
    return rows


def _results_rows(source: Source, table: Table) -> list[tuple[str, list[float | None]]]:
    figures: dict[str, Figure] = {
        f.subset: f
        for f in source.figures
        if f.route == "results" and f.subset and f.measure == table.measure and f.view == table.setting
    }
    if not figures or not any(table.sources.get(c) == {c: 1.0} for c in figures):
        return []
    cells = [
        figures[c].value / 100 if c in figures and table.sources.get(c) == {c: 1.0} else None for c in table.columns
    ]
    label = f"{source.name} (published{', reference: other settings' if source.figures[0].reference else ''})"
    return [(label, cells)]


def add_published(
    tables: list[Table], benchmark: str, tie_rule: str | None, results: list[ResultRecord], results_dir
) -> list[str]:
    """Append the published rows to the tables they apply to; the notes to print. A result of another data revision
    than a source's figures is refused (one line, exit 2)."""
    from ..records.results import result_path

    notes = []
    for source in (s for s in load_sources() if s.benchmark == benchmark):
        if source.revision is not None:
            for record in results:
                check_revision(result_path(results_dir, benchmark, record.method, record.subset), record, source)
        added = 0
        for table in tables:
            rows = _card_rows(source, table, tie_rule) + _results_rows(source, table)
            table.rows.extend(rows)
            table.references.update(name for name, _ in rows)
            if table.cost is not None:
                table.cost.update({name: "" for name, _ in rows})
            added += len(rows)
        if added:
            notes.append(
                f"rows marked (published: {source.name}) are printed figures of {source.title} ({source.citation}): "
                "no per-query scores, so no comparison, interval or marker"
            )
    return notes


def matrix_section(benchmark: str, results_dir) -> list[tuple[str, str]]:
    """The HTML report's section: the reproduction matrix of the benchmark's sources, from what is on disk (no
    computation, no plan)."""
    from .build import ReproduceRequest, reproduce

    names = [s.name for s in load_sources() if s.benchmark == benchmark]
    if not names:
        return []
    matrix = reproduce(ReproduceRequest(names, results_dir=results_dir, plans=False))
    return [("Published figures (evals-repro reproduce)", f"<p>{matrix.summary()}</p>\n" + matrix.html_section())]

"""What `report` prints and writes beyond the plain tables: comparisons, plots, the HTML page.

`build_bundle` reads the results once and gathers the tables (as `declared_report` builds them), the
notes, each table's comparisons (with `--baseline` / `--compare`) and the figures (with `--plots` or an
HTML output); the CLI prints and writes from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..benchmarks.declaration import BenchmarkDeclaration
from ..records.results import ResultRecord
from .comparisons import TableComparisons, check_measure, compare_tables, comparisons_csv, render_markdown
from .plots import Figure
from .report import Table, declared_report, per_query_measures, select_results, to_csv
from .significance import DEFAULT_PERMUTATIONS, DEFAULT_SEED, check_permutations, check_seed


@dataclass
class ReportBundle:
    benchmark: str
    measures: list[str]
    tables: list[Table]
    notes: list[str]
    results: list[ResultRecord]
    comparisons: list[TableComparisons] | None = None
    figures: list[Figure] = field(default_factory=list)
    tie_rule: str | None = None
    seed: int = DEFAULT_SEED  # of the comparisons' and the plots' bootstrap and randomization draws

    def markdown(self, decimals: int = 1) -> str:
        return render_markdown(self.tables, self.comparisons or [], decimals)

    def csv(self, decimals: int = 1) -> str:
        """The comparisons (one row each) when there are any, else the tables as `report -o x.csv` writes them."""
        if self.comparisons is not None:
            return comparisons_csv(self.comparisons, decimals)
        return to_csv(self.tables, decimals)


def build_bundle(
    results_dir: Path,
    decl: BenchmarkDeclaration,
    measures: list[str],
    first_stage_only: bool = False,
    tie_rule: str | None = None,
    baseline: str | None = None,
    all_pairs: bool = False,
    permutations: int = DEFAULT_PERMUTATIONS,
    figures: bool = False,
    cost: bool = False,
    seed: int = DEFAULT_SEED,
    methods: list[str] | None = None,
) -> ReportBundle:
    check_permutations(permutations)
    check_seed(seed)
    comparing = baseline is not None or all_pairs
    tables: list[Table] = []
    notes: list[str] = []
    read = per_query_measures(measures)  # each file is read once, with these measures' per-query scores
    for m in measures:
        if comparing:
            check_measure(m)
        found, more = declared_report(results_dir, decl, m, first_stage_only, tie_rule, cost, methods, read)
        tables += found
        notes += [note for note in more if note not in notes]
    results, _ = select_results(results_dir, decl.name, first_stage_only, tie_rule, methods, read)
    bundle = ReportBundle(decl.name, measures, tables, notes, results, tie_rule=tie_rule, seed=seed)
    if comparing:
        bundle.comparisons = compare_tables(results, tables, decl.name, baseline, all_pairs, permutations, seed=seed)
    if figures:
        from .report_plots import report_figures

        bundle.figures = report_figures(results, tables, decl.name, seed=seed, comparisons=bundle.comparisons)
    return bundle

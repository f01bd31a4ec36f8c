"""`evals-repro report`: the tables (and comparisons, plots, HTML page) of the results `run` wrote.

Its own module beside `run.py`: the two commands share only the results folder and tie-rule help.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .application import app
from .options import LIST_HELP, MAX_DECIMALS, BreakdownField, TieRule, seed_option, split_list, value_of
from .run import RESULTS_DIR_HELP, TIE_RULE_HELP

REPORT_SUFFIXES = (".md", ".csv", ".html")


@app.command("report")
def report_command(
    ctx: typer.Context,
    benchmark: str = typer.Option(
        "vidore-v3", "--benchmark", "-b", help="The benchmark whose results to tabulate (a name or a BEIR folder)."
    ),
    measure: Optional[list[str]] = typer.Option(
        None,
        "--measure",
        "-m",
        help=f"Measures the tables show, in order (default ndcg_at_10; e.g. recall_at_100); {LIST_HELP}.",
    ),
    methods: Optional[list[str]] = typer.Option(
        None,
        "--methods",
        help="The methods shown, in this order (default: every method with results, first stages alphabetically, "
        f"each followed by its rerankings); {LIST_HELP}.",
    ),
    first_stage_only: bool = typer.Option(False, "--first-stage-only", help="Hide reranked methods."),
    results_dir: Path = typer.Option(Path("results"), "--results-dir", help=RESULTS_DIR_HELP),
    output: Optional[Path] = typer.Option(
        None,
        "--output",
        "-o",
        help="Also write the report: .md (the tables as printed), .csv (the tables, or one row per comparison with "
        "--baseline/--compare) or .html (one self-contained page: tables, comparisons, plots, protocol, provenance).",
    ),
    decimals: int = typer.Option(
        1, min=0, max=MAX_DECIMALS, help=f"Decimals of the x100 scores (0 to {MAX_DECIMALS}: past that, float noise)."
    ),
    by_choice: Optional[BreakdownField] = typer.Option(None, "--by", help="Break scores down by this query metadata."),
    rule_choice: TieRule = typer.Option(
        TieRule.group_mean, "--tie-rule", help=TIE_RULE_HELP + " Other rules' results are left out."
    ),
    cost: bool = typer.Option(False, "--cost", help="Add a column: what each method's results cost (USD)."),
    baseline: Optional[str] = typer.Option(
        None,
        "--baseline",
        help="Compare every method with this one: differences with 95% bootstrap intervals, randomization and "
        "t-test p-values (Holm-adjusted per table), markers in the tables.",
    ),
    compare: bool = typer.Option(
        False, "--compare", help="Compare every pair of methods (as --baseline does; not with --baseline)."
    ),
    permutations: int = typer.Option(
        10_000,
        "--permutations",
        help="Randomization-test permutations per comparison of --baseline/--compare (seeded: same p every run); at "
        "least 20 x a table's comparisons, the fewest with which p < 0.05 can survive Holm's adjustment.",
    ),
    seed: int = seed_option("the comparisons' bootstrap and randomization draws, and of the plots' intervals"),
    plots: Optional[Path] = typer.Option(
        None,
        "--plots",
        help="Write figures here (PNG and SVG): bars per method with 95% intervals, the baseline and markers; language "
        "x subset heatmaps on one colour scale. Figures it wrote here earlier that no longer have one are removed "
        "(listed in evals-repro-plots.json); nothing else is touched.",
    ),
    published: bool = typer.Option(
        False,
        "--published",
        help="Add the published figures of this benchmark (evals-repro reproduce) as rows, without significance, "
        "and the reproduction matrix to an .html --output.",
    ),
) -> None:
    """Print the monolingual and crosslingual tables (methods x subsets, x100), or a --by breakdown.

    Results with float gains add RCP-nDCG@10 tables; rcp benchmarks add the native-language and
    language-mean views per domain."""
    chosen = split_list(methods, "--methods")
    check_combination(ctx, baseline, compare, plots is not None, output, chosen)
    from ..base.io import check_output_file, write_output_text
    from ..benchmarks import get_benchmark
    from ..metrics.published.ndcg_float import check_tie_rule
    from ..reporting.report import declared_report, to_csv, to_markdown
    from ..reporting.significance import check_seed

    check_seed(seed)
    if output is not None and output.suffix.lower() not in REPORT_SUFFIXES:
        from ..base.errors import UsageError, choices

        raise UsageError(
            f"--output {output}: unknown file type '{output.suffix or '(none)'}'",
            f"name the file with one of {choices(REPORT_SUFFIXES)} (Markdown tables, CSV or a self-contained HTML page)",
        )
    if output is not None:
        check_output_file(output, "--output")
    if plots is not None:  # checked now, made when the figures are written: a refusal creates nothing
        from ..base.io import check_directories

        check_directories((plots, "--plots"))
    output_html = output is not None and output.suffix.lower() == ".html"
    tie_rule = check_tie_rule(value_of(rule_choice))
    by = value_of(by_choice) if by_choice is not None else None
    decl = get_benchmark(benchmark)
    measures = split_list(measure, "--measure") or ["ndcg_at_10"]
    if by is not None and (cost or baseline is not None or compare or plots is not None or output_html or published):
        from ..base.errors import UsageError

        raise UsageError(
            "--by breaks scores down; it does not take --cost, --baseline, --compare, --plots, --published or an "
            ".html --output",
            "run them separately",
        )
    if by is not None:
        from ..reporting.breakdown import breakdown_report

        if len(measures) > 1:
            from ..base.errors import UsageError

            raise UsageError(
                f"--by breaks down one measure, not {len(measures)} ({', '.join(measures)})",
                "give one --measure with --by, or run report --by once per measure",
            )
        text = breakdown_report(
            results_dir, decl.name, by, measures[0], first_stage_only, decimals, tie_rule, methods=chosen
        )
        typer.echo(text)
        if output is not None:
            fmt = "csv" if output.suffix.lower() == ".csv" else "markdown"
            write_output_text(
                output,
                text
                if fmt == "markdown"
                else breakdown_report(
                    results_dir, decl.name, by, measures[0], first_stage_only, decimals, tie_rule, "csv", chosen
                ),
                "--output",
            )
        return
    if baseline is not None or compare or plots is not None or output_html:
        from ..reporting.bundle import build_bundle

        bundle = build_bundle(
            results_dir,
            decl,
            measures,
            first_stage_only,
            tie_rule,
            baseline,
            compare,
            permutations,
            figures=plots is not None or output_html,
            cost=cost,
            seed=seed,
            methods=chosen,
        )
        extra: list[tuple[str, str]] = []
        if published:
            from ..reproduce.beside import add_published, matrix_section

            bundle.notes += add_published(bundle.tables, decl.name, tie_rule, bundle.results, results_dir)
            extra = matrix_section(decl.name, results_dir) if output_html else []
        try:
            if cost and bundle.comparisons is not None and output is not None and output.suffix.lower() == ".csv":
                bundle.notes.append(
                    f"--output {output} holds one row per comparison, without the cost column: the printed tables "
                    "have it (and an .md or .html --output)"
                )
            for note in bundle.notes:
                typer.echo(f"note: {note}", err=True)
            text = bundle.markdown(decimals)
            typer.echo(text)
            if plots is not None:
                from ..reporting.plots import save

                saved = save(bundle.figures, plots)
                if saved.note:
                    typer.echo(f"note: {saved.note}", err=True)
                typer.echo(
                    f"wrote {len(saved.written)} plot files ({len(bundle.figures)} figures, PNG and SVG) to {plots}",
                    err=True,
                )
                if saved.removed:
                    typer.echo(
                        f"removed {len(saved.removed)} plot files written there earlier that no figure replaces: "
                        + ", ".join(path.name for path in saved.removed),
                        err=True,
                    )
            if output is not None:
                if output_html:
                    from ..reporting.html_report import report_html

                    write_output_text(output, report_html(bundle, decimals, extra), "--output")
                else:
                    write_output_text(
                        output, bundle.csv(decimals) if output.suffix.lower() == ".csv" else text, "--output"
                    )
        finally:
            from ..reporting.plots import close

            close(bundle.figures)
        return
    tables: list = []
    notes: list[str] = []
    for m in measures:  # the tables read no per-query score
        measure_tables, measure_notes = declared_report(
            results_dir, decl, m, first_stage_only, tie_rule, cost, chosen, per_query=()
        )
        tables += measure_tables
        notes += [note for note in measure_notes if note not in notes]
    if published:
        from ..reporting.report import select_results
        from ..reproduce.beside import add_published

        results, _ = select_results(results_dir, decl.name, first_stage_only, tie_rule, per_query=())
        notes += add_published(tables, decl.name, tie_rule, results, results_dir)
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    text = "\n".join(to_markdown(t, decimals) for t in tables)
    typer.echo(text)
    if output is not None:
        write_output_text(output, to_csv(tables, decimals) if output.suffix.lower() == ".csv" else text, "--output")


def check_combination(
    ctx: typer.Context,
    baseline: str | None,
    compare: bool,
    plots: bool,
    output: Path | None,
    methods: list[str] | None,
) -> None:
    """Options that would be ignored are refused, before any result is read: --baseline with --compare (one
    would win silently), --permutations without a comparison, --seed with nothing drawn, a --baseline that
    --methods leaves out."""
    from ..base.errors import UsageError

    def given(name: str) -> bool:  # typed on the command line (by name: typer's click is not always `click`)
        return getattr(ctx.get_parameter_source(name), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")

    if baseline is not None and compare:
        raise UsageError(
            f"--baseline {baseline} and --compare are two kinds of comparison: --baseline compares every method "
            "with one, --compare every pair",
            "give one of them",
        )
    comparing = baseline is not None or compare
    if given("permutations") and not comparing:
        raise UsageError(
            "--permutations sets the randomization test of --baseline/--compare, and neither is given",
            "add --baseline METHOD or --compare, or drop --permutations",
        )
    html = output is not None and output.suffix.lower() == ".html"
    if given("seed") and not (comparing or plots or html):
        raise UsageError(
            "--seed seeds the draws of --baseline/--compare and of the plots' intervals, and none is asked for",
            "add --baseline METHOD, --compare, --plots DIR or -o report.html, or drop --seed",
        )
    if baseline is not None and methods and baseline not in methods:
        raise UsageError(
            f"--baseline {baseline} is not among --methods {','.join(methods)}",
            f"add {baseline} to --methods (where its row should be), or choose a baseline from {', '.join(methods)}",
        )

"""`evals-repro run` and `evals-repro report`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..providers.settings import OPENAI_EMBEDDING_BUDGET
from .application import app, given_options
from .costs import MAX_COST, PLAN, PRICES
from .options import (
    LIST_HELP,
    MAX_ATTEMPTS_DEFAULT,
    MAX_DECIMALS,
    TIMEOUT_DEFAULT,
    BreakdownField,
    Content,
    ScorePrecision,
    Setting,
    TieRule,
    budget_option,
    split_list,
    value_of,
)

REPORT_SUFFIXES = (".md", ".csv", ".html")
STATUSES = ("written", "rescored", "skipped", "failed")
TIE_RULE_HELP = (
    "Tied scores in RCP-nDCG (float gains): group-mean (the paper's), doc-id (trec_eval's) or input-order (run order)."
)
RESULTS_DIR_HELP = (
    "Where result files live: <results-dir>/<benchmark>/<method>/<subset>.json (':' and '/' in <method> as %3A, %2F)."
)
# Defaults the library applies when an option is not given (the option itself stays None: "not given").
RERANK_DEPTH_DEFAULT = 50  # pipeline.DEFAULT_RERANK_DEPTH
RERANK_TOP_K_DEFAULT = 10  # stores.search.DEFAULT_RERANK_TOP_K


class RunCommand(typer.core.TyperCommand):
    """`run`: its --help lists the rerankers registered now (the registry is read only when help is shown)."""

    def format_help(self, ctx, formatter) -> None:
        from ..registry import RERANKERS

        for param in self.params:
            if param.name == "rerank" and isinstance(param, typer.core.TyperOption):
                param.help = (
                    f"Rerank the first stage with a registered reranker, NAME or NAME:model: "
                    f"{', '.join(RERANKERS.names())}."
                )
        super().format_help(ctx, formatter)


@app.command("run", cls=RunCommand)
def run_command(
    method: str = typer.Argument(
        ..., help="bm25, minilm, voyage-4-large, rrf:a+b, <first stage>+<reranker>@<depth>..."
    ),
    benchmark: str = typer.Option("vidore-v3", "--benchmark", "-b", help="A declared benchmark or a BEIR folder."),
    subsets: Optional[list[str]] = typer.Option(
        None, "--subsets", "-s", help=f"Subsets to run (default: all); {LIST_HELP}."
    ),
    setting: Setting = typer.Option(
        Setting.monolingual, help="monolingual: native-language queries; crosslingual: every query language."
    ),
    top_k: int = typer.Option(100, "--top-k", help="Pages retrieved per query."),
    results_dir: Path = typer.Option(Path("results"), "--results-dir", help=RESULTS_DIR_HELP),
    cache_dir: Path = typer.Option(
        Path("cache"), "--cache-dir", help="Embedding and index caches (content-addressed, safe to share)."
    ),
    resume: bool = typer.Option(False, "--resume", help="Skip subsets whose complete result covers this run."),
    content: Content = typer.Option(Content.markdown, help="What a page is for the method: its text or its image."),
    revision: Optional[str] = typer.Option(None, help="Load another dataset revision than the declared pin."),
    measure: Optional[list[str]] = typer.Option(
        None, "--measure", "-m", help=f"Measures (default: the standard set); {LIST_HELP}."
    ),
    language: Optional[str] = typer.Option(None, help="Native language of a BEIR folder (default english)."),
    tie_rule: TieRule = typer.Option(TieRule.group_mean, "--tie-rule", help=TIE_RULE_HELP),
    score_precision: ScorePrecision = typer.Option(
        ScorePrecision.float32,
        "--score-precision",
        help="Score comparison when ranking: float32 = trec_eval 9 / pytrec_eval (default), float64 = trec_eval 10.",
    ),
    rerank: Optional[str] = typer.Option(
        None, help="Rerank the first stage with a registered reranker (listed by `run --help`)."
    ),
    rerank_depth: Optional[int] = typer.Option(
        None,
        "--rerank-depth",
        show_default=str(RERANK_DEPTH_DEFAULT),
        help="Candidates reranked per query by --rerank.",
    ),
    rerank_top_k: Optional[int] = typer.Option(
        None,
        "--rerank-top-k",
        min=1,
        show_default=str(RERANK_TOP_K_DEFAULT),
        help="Store reranking: results reranked by the store.",
    ),
    store_prefix: Optional[str] = typer.Option(None, "--store-prefix", help="Mixedbread store name prefix."),
    workers: int = typer.Option(4, min=1, help="Concurrent API requests per provider (at least 1)."),
    timeout: Optional[float] = typer.Option(None, show_default=TIMEOUT_DEFAULT, help="API request timeout in seconds."),
    max_attempts: Optional[int] = typer.Option(
        None, "--max-attempts", show_default=MAX_ATTEMPTS_DEFAULT, help="Attempts per API request."
    ),
    voyage_tpm: Optional[int] = budget_option("voyage", "tpm"),
    voyage_rpm: Optional[int] = budget_option("voyage", "rpm"),
    voyage_interval: Optional[float] = budget_option("voyage", "interval"),
    cohere_tpm: Optional[int] = budget_option("cohere", "tpm"),
    cohere_rpm: Optional[int] = budget_option("cohere", "rpm"),
    cohere_interval: Optional[float] = budget_option("cohere", "interval"),
    gemini_tpm: Optional[int] = budget_option("gemini", "tpm"),
    gemini_rpm: Optional[int] = budget_option("gemini", "rpm"),
    gemini_interval: Optional[float] = budget_option("gemini", "interval"),
    mixedbread_tpm: Optional[int] = budget_option("mixedbread", "tpm"),
    mixedbread_rpm: Optional[int] = budget_option("mixedbread", "rpm"),
    mixedbread_interval: Optional[float] = budget_option("mixedbread", "interval"),
    index_ram: Optional[str] = typer.Option(
        None,
        "--index-ram",
        help="Dense: largest corpus matrix searched in RAM (8G, 512M; auto = half the free memory).",
    ),
    prices: Optional[Path] = PRICES,
    plan: bool = PLAN,
    max_cost: Optional[float] = MAX_COST,
    base_url: Optional[str] = typer.Option(
        None, "--base-url", help="openai:<model>: server URL(s) with /v1, replicas comma-separated (OPENAI_BASE_URLS)."
    ),
    dimensions: Optional[int] = typer.Option(None, "--dimensions", help="openai:<model>: output dimensions."),
    prefix_style: Optional[str] = typer.Option(
        None, "--prefix-style", help="openai:<model>: query/document prefixes: none, e5, bge, nomic."
    ),
    query_prefix: Optional[str] = typer.Option(None, "--query-prefix", help="openai:<model>: text before each query."),
    document_prefix: Optional[str] = typer.Option(
        None, "--document-prefix", help="openai:<model>: text before each page."
    ),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="openai:<model>: inputs per request (128)."),
    openai_tpm: Optional[int] = typer.Option(
        None,
        "--openai-tpm",
        show_default=f"{OPENAI_EMBEDDING_BUDGET[0]:,}",
        help="openai:<model> tokens per minute on OpenAI (none on a server of your own; 0: none).",
    ),
    openai_rpm: Optional[int] = typer.Option(
        None,
        "--openai-rpm",
        show_default=f"{OPENAI_EMBEDDING_BUDGET[1]:,}",
        help="openai:<model> requests per minute on OpenAI (none on a server of your own; 0: none).",
    ),
    openai_interval: Optional[float] = typer.Option(
        None, "--openai-interval", show_default="none", help="Seconds between OpenAI calls."
    ),
    rerank_base_url: Optional[str] = typer.Option(
        None, "--rerank-base-url", help="rerank-api: server URL(s), replicas comma-separated (RERANK_API_BASE_URLS)."
    ),
    rerank_endpoint: Optional[str] = typer.Option(
        None, "--rerank-endpoint", help="rerank-api: rerank (Cohere/Jina style), score (vLLM) or tei."
    ),
    rerank_max_tokens: Optional[int] = typer.Option(
        None, "--rerank-max-tokens", help="rerank-api: tokens kept per document (default: what fits the server)."
    ),
) -> None:
    """Evaluate a method on every (or the chosen) subset of a benchmark; one result file per subset."""
    from ..evaluation import RunRequest, run_benchmark
    from ..metrics.protocol import check_tie_rule
    from ..progress import console

    options = {
        "workers": workers,
        **given_options(
            rerank_top_k=rerank_top_k,
            timeout=timeout,
            max_attempts=max_attempts,
            store_prefix=store_prefix,
            voyage_tpm=voyage_tpm,
            voyage_rpm=voyage_rpm,
            voyage_interval=voyage_interval,
            cohere_tpm=cohere_tpm,
            cohere_rpm=cohere_rpm,
            cohere_interval=cohere_interval,
            gemini_tpm=gemini_tpm,
            gemini_rpm=gemini_rpm,
            gemini_interval=gemini_interval,
            mixedbread_tpm=mixedbread_tpm,
            mixedbread_rpm=mixedbread_rpm,
            mixedbread_interval=mixedbread_interval,
            index_ram=index_ram,
            base_url=base_url,
            dimensions=dimensions,
            prefix_style=prefix_style,
            query_prefix=query_prefix,
            document_prefix=document_prefix,
            batch_size=batch_size,
            openai_tpm=openai_tpm,
            openai_rpm=openai_rpm,
            openai_interval=openai_interval,
            rerank_base_url=rerank_base_url,
            rerank_endpoint=rerank_endpoint,
            rerank_max_tokens=rerank_max_tokens,
        ),
    }
    request = RunRequest(
        method=method,
        benchmark=benchmark,
        subsets=split_list(subsets, "--subsets"),
        setting=value_of(setting),
        top_k=top_k,
        results_dir=results_dir,
        cache_dir=cache_dir,
        resume=resume,
        content=value_of(content),
        revision=revision,
        measures=split_list(measure, "--measure"),
        language=language,
        tie_rule=check_tie_rule(value_of(tie_rule)),
        score_precision=value_of(score_precision),
        rerank=rerank,
        rerank_depth=rerank_depth,
        options=options,
    )
    from ..providers.keys import redact

    def echo(line: str) -> None:  # every line a run prints passes the key redaction (a failure may quote a provider)
        console.print(redact(line), markup=False, highlight=False, soft_wrap=True)

    from ..planning.run import plan_run
    from .costs import cost_gate, with_ceiling

    table = cost_gate(lambda: plan_run(request, echo), plan, max_cost, prices)
    if table is None:
        return
    summary = with_ceiling(lambda: run_benchmark(request, echo=echo), table, max_cost)
    refusal = summary.refusal()
    if refusal is not None and not summary.usage.as_dict():
        raise refusal  # every subset refused on its data or options, nothing spent: that reason is the answer
    counts = {status: sum(o.status == status for o in summary.outcomes) for status in STATUSES}
    shown = ", ".join(f"{n} {status}" for status, n in counts.items() if n or status == "written")
    from ..providers.prices import spend_text

    spent = spend_text(summary.usage.summary(), summary.usage.billed())
    console.print(
        f"{summary.method} on {summary.benchmark}: subsets {shown}; spent: {spent}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if refusal is not None:
        raise refusal
    if summary.failures:
        from ..errors import SubsetsFailed

        raise SubsetsFailed(summary.failures)


@app.command("report")
def report_command(
    benchmark: str = typer.Option(
        "vidore-v3", "--benchmark", "-b", help="The benchmark whose results to tabulate (a name or a BEIR folder)."
    ),
    measure: Optional[list[str]] = typer.Option(
        None,
        "--measure",
        "-m",
        help=f"Measures the tables show, in order (default ndcg_at_10; e.g. recall_at_100); {LIST_HELP}.",
    ),
    first_stage_only: bool = typer.Option(False, "--first-stage-only", help="Hide reranked methods."),
    results_dir: Path = typer.Option(Path("results"), "--results-dir", help=RESULTS_DIR_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Also write the tables (.md, or .csv)."),
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
    compare: bool = typer.Option(False, "--compare", help="Compare every pair of methods (as --baseline does)."),
    permutations: int = typer.Option(
        10_000, "--permutations", help="Randomization-test permutations per comparison (seeded: same p every run)."
    ),
    seed: int = typer.Option(
        42,
        "--seed",
        help="Seed of the comparisons' bootstrap and randomization draws, and of the plots' intervals "
        "(the same seed, the same p-values and intervals).",
    ),
    plots: Optional[Path] = typer.Option(
        None,
        "--plots",
        help="Write figures here (PNG and SVG): bars per method with 95% intervals; language x subset heatmaps.",
    ),
) -> None:
    """Print the monolingual and crosslingual tables (methods x subsets, x100), or a --by breakdown.

    Results with float gains add RCP-nDCG@10 tables; rcp benchmarks add the native-language and
    language-mean views per domain."""
    from ..benchmarks import get_benchmark
    from ..io import check_output_file, write_output_text
    from ..metrics.published.ndcg_float import check_tie_rule
    from ..report import declared_report, to_csv, to_markdown
    from ..significance import check_seed

    check_seed(seed)
    if output is not None and output.suffix.lower() not in REPORT_SUFFIXES:
        from ..errors import UsageError, choices

        raise UsageError(
            f"--output {output}: unknown file type '{output.suffix or '(none)'}'",
            f"name the file with one of {choices(REPORT_SUFFIXES)} (Markdown tables, CSV or a self-contained HTML page)",
        )
    if output is not None:
        check_output_file(output, "--output")
    if plots is not None:
        from ..io import ensure_directory

        ensure_directory(plots, "--plots")
    output_html = output is not None and output.suffix.lower() == ".html"
    tie_rule = check_tie_rule(value_of(rule_choice))
    by = value_of(by_choice) if by_choice is not None else None
    decl = get_benchmark(benchmark)
    measures = split_list(measure, "--measure") or ["ndcg_at_10"]
    if by is not None and (cost or baseline is not None or compare or plots is not None or output_html):
        from ..errors import UsageError

        raise UsageError(
            "--by breaks scores down; it does not take --cost, --baseline, --compare, --plots or an .html --output",
            "run them separately",
        )
    if by is not None:
        from ..breakdown import breakdown_report

        if len(measures) > 1:
            from ..errors import UsageError

            raise UsageError(
                f"--by breaks down one measure, not {len(measures)} ({', '.join(measures)})",
                "give one --measure with --by, or run report --by once per measure",
            )
        text = breakdown_report(results_dir, decl.name, by, measures[0], first_stage_only, decimals, tie_rule)
        typer.echo(text)
        if output is not None:
            fmt = "csv" if output.suffix.lower() == ".csv" else "markdown"
            write_output_text(
                output,
                text
                if fmt == "markdown"
                else breakdown_report(
                    results_dir, decl.name, by, measures[0], first_stage_only, decimals, tie_rule, fmt="csv"
                ),
                "--output",
            )
        return
    if baseline is not None or compare or plots is not None or output_html:
        from ..report_bundle import build_bundle

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
        )
        try:
            for note in bundle.notes:
                typer.echo(f"note: {note}", err=True)
            text = bundle.markdown(decimals)
            typer.echo(text)
            if plots is not None:
                from ..plots import save

                written = save(bundle.figures, plots)
                typer.echo(
                    f"wrote {len(written)} plot files ({len(bundle.figures)} figures, PNG and SVG) to {plots}", err=True
                )
            if output is not None:
                if output_html:
                    from ..html_report import report_html

                    write_output_text(output, report_html(bundle, decimals), "--output")
                else:
                    write_output_text(
                        output, bundle.csv(decimals) if output.suffix.lower() == ".csv" else text, "--output"
                    )
        finally:
            from ..plots import close

            close(bundle.figures)
        return
    tables: list = []
    notes: list[str] = []
    for m in measures:
        measure_tables, measure_notes = declared_report(results_dir, decl, m, first_stage_only, tie_rule, cost)
        tables += measure_tables
        notes += [note for note in measure_notes if note not in notes]
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    text = "\n".join(to_markdown(t, decimals) for t in tables)
    typer.echo(text)
    if output is not None:
        write_output_text(output, to_csv(tables, decimals) if output.suffix.lower() == ".csv" else text, "--output")

"""`evals-repro run` and `evals-repro report`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app, given_options

STATUSES = ("written", "rescored", "skipped", "failed")
TIE_RULE_HELP = "Tied scores in RCP-nDCG (float gains): group-mean (the paper's) | doc-id (trec_eval's)."


@app.command("run")
def run_command(
    method: str = typer.Argument(
        ..., help="bm25, minilm, voyage-4-large, rrf:a+b, <first stage>+<reranker>@<depth>..."
    ),
    benchmark: str = typer.Option("vidore-v3", "--benchmark", "-b", help="A declared benchmark or a BEIR folder."),
    subsets: Optional[list[str]] = typer.Option(None, "--subsets", "-s", help="Subsets to run (default: all)."),
    setting: str = typer.Option("monolingual", help="monolingual | crosslingual"),
    top_k: int = typer.Option(100, "--top-k", help="Pages retrieved per query."),
    results_dir: Path = typer.Option(Path("results"), "--results-dir"),
    cache_dir: Path = typer.Option(Path("cache"), "--cache-dir"),
    resume: bool = typer.Option(False, "--resume", help="Skip subsets whose complete result covers this run."),
    content: str = typer.Option("markdown", help="markdown | images"),
    revision: Optional[str] = typer.Option(None, help="Load another dataset revision than the declared pin."),
    measure: Optional[list[str]] = typer.Option(None, "--measure", "-m", help="Measures (default: the standard set)."),
    language: Optional[str] = typer.Option(None, help="Native language of a BEIR folder (default english)."),
    tie_rule: str = typer.Option("group-mean", "--tie-rule", help=TIE_RULE_HELP),
    score_precision: str = typer.Option(
        "float32",
        "--score-precision",
        help="Compare scores as float32 (trec_eval 9, pytrec_eval: the default) or float64 (trec_eval 10).",
    ),
    rerank: Optional[str] = typer.Option(None, help="Rerank the first stage: cohere, voyage, mixedbread[:model]."),
    rerank_depth: int = typer.Option(50, "--rerank-depth", help="Candidates reranked per query."),
    rerank_top_k: Optional[int] = typer.Option(
        None, "--rerank-top-k", help="Store reranking: results reranked by the store (default 10)."
    ),
    store_prefix: Optional[str] = typer.Option(None, "--store-prefix", help="Mixedbread store name prefix."),
    workers: int = typer.Option(4, help="Concurrent API requests per provider."),
    timeout: Optional[float] = typer.Option(None, help="API request timeout in seconds."),
    max_attempts: Optional[int] = typer.Option(None, "--max-attempts", help="Attempts per API request (default 6)."),
    voyage_tpm: Optional[int] = typer.Option(None, "--voyage-tpm", help="Voyage tokens per minute."),
    voyage_rpm: Optional[int] = typer.Option(None, "--voyage-rpm", help="Voyage requests per minute."),
    voyage_interval: Optional[float] = typer.Option(None, "--voyage-interval", help="Seconds between Voyage calls."),
    cohere_tpm: Optional[int] = typer.Option(None, "--cohere-tpm"),
    cohere_rpm: Optional[int] = typer.Option(None, "--cohere-rpm"),
    cohere_interval: Optional[float] = typer.Option(None, "--cohere-interval"),
    gemini_tpm: Optional[int] = typer.Option(None, "--gemini-tpm"),
    gemini_rpm: Optional[int] = typer.Option(None, "--gemini-rpm"),
    gemini_interval: Optional[float] = typer.Option(None, "--gemini-interval"),
    mixedbread_tpm: Optional[int] = typer.Option(None, "--mixedbread-tpm"),
    mixedbread_rpm: Optional[int] = typer.Option(None, "--mixedbread-rpm"),
    mixedbread_interval: Optional[float] = typer.Option(None, "--mixedbread-interval"),
    index_ram: Optional[str] = typer.Option(
        None,
        "--index-ram",
        help="Dense: largest corpus matrix searched in RAM (8G, 512M; auto = half the free memory).",
    ),
) -> None:
    """Evaluate a method on every (or the chosen) subset of a benchmark; one result file per subset."""
    from ..evaluation import RunRequest, run_benchmark
    from ..progress import console
    from ..retrieval.dense import parse_size

    parse_size(index_ram)  # a bad size fails now, naming the option

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
        ),
    }
    request = RunRequest(
        method=method,
        benchmark=benchmark,
        subsets=subsets or None,
        setting=setting,
        top_k=top_k,
        results_dir=results_dir,
        cache_dir=cache_dir,
        resume=resume,
        content=content,
        revision=revision,
        measures=measure or None,
        language=language,
        tie_rule=tie_rule,
        score_precision=score_precision,
        rerank=rerank,
        rerank_depth=rerank_depth,
        options=options,
    )
    summary = run_benchmark(
        request, echo=lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True)
    )
    counts = {status: sum(o.status == status for o in summary.outcomes) for status in STATUSES}
    shown = ", ".join(f"{n} {status}" for status, n in counts.items() if n or status == "written")
    console.print(
        f"{summary.method} on {summary.benchmark}: subsets {shown}; spent: {summary.usage.summary()}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if summary.failures:
        from ..errors import SubsetsFailed

        raise SubsetsFailed(summary.failures)


@app.command("report")
def report_command(
    benchmark: str = typer.Option("vidore-v3", "--benchmark", "-b"),
    measure: str = typer.Option("ndcg_at_10", "--measure", "-m"),
    first_stage_only: bool = typer.Option(False, "--first-stage-only", help="Hide reranked methods."),
    results_dir: Path = typer.Option(Path("results"), "--results-dir"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Also write the tables (.md, or .csv)."),
    decimals: int = typer.Option(1, help="Decimals of the x100 scores."),
    by: Optional[str] = typer.Option(
        None, "--by", help="Break scores down by query_type | query_format | content_type | relevant_pages."
    ),
    tie_rule: str = typer.Option(
        "group-mean", "--tie-rule", help=TIE_RULE_HELP + " Other rules' results are left out."
    ),
) -> None:
    """Print the monolingual and crosslingual tables (methods x subsets, x100), or a --by breakdown.

    Results with float gains add RCP-nDCG@10 tables; rcp benchmarks add the native-language and
    language-mean views per domain."""
    from ..benchmarks import get_benchmark
    from ..io import atomic_write_text
    from ..metrics.ndcg_float import check_tie_rule
    from ..report import declared_report, to_csv, to_markdown

    check_tie_rule(tie_rule)
    decl = get_benchmark(benchmark)
    if by is not None:
        from ..breakdown import breakdown_report

        text = breakdown_report(results_dir, decl.name, by, measure, first_stage_only, decimals, tie_rule)
        typer.echo(text)
        if output is not None:
            fmt = "csv" if output.suffix == ".csv" else "markdown"
            atomic_write_text(
                output,
                text
                if fmt == "markdown"
                else breakdown_report(
                    results_dir, decl.name, by, measure, first_stage_only, decimals, tie_rule, fmt="csv"
                ),
            )
        return
    tables, notes = declared_report(results_dir, decl, measure, first_stage_only, tie_rule)
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    text = "\n".join(to_markdown(t, decimals) for t in tables)
    typer.echo(text)
    if output is not None:
        atomic_write_text(output, to_csv(tables, decimals) if output.suffix == ".csv" else text)

"""`evals-repro run` (`evals-repro report` tabulates what it writes: `report.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import typer

from ..providers.settings import OPENAI_EMBEDDING_BUDGET
from .application import app, given_options
from .costs import Money
from .groups import GROUP, ApiCalls, OptionGroup, ProviderBudgets, RerankServer, grouped, option
from .options import (
    LIST_HELP,
    Content,
    ScorePrecision,
    Setting,
    TieRule,
    split_list,
    value_of,
)

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


@dataclass
class OpenAIServer(OptionGroup):
    """`openai:<model>`: an OpenAI-compatible embedding server (OpenAI itself, vLLM, TEI) and how it is asked."""

    base_url: Optional[str] = option(
        None, "--base-url", help="openai:<model>: server URL(s) with /v1, replicas comma-separated (OPENAI_BASE_URLS)."
    )
    dimensions: Optional[int] = option(None, "--dimensions", help="openai:<model>: output dimensions.")
    prefix_style: Optional[str] = option(
        None, "--prefix-style", help="openai:<model>: query/document prefixes: none, e5, bge, nomic."
    )
    query_prefix: Optional[str] = option(None, "--query-prefix", help="openai:<model>: text before each query.")
    document_prefix: Optional[str] = option(None, "--document-prefix", help="openai:<model>: text before each page.")
    batch_size: Optional[int] = option(None, "--batch-size", help="openai:<model>: inputs per request (128).")
    openai_tpm: Optional[int] = option(
        None,
        "--openai-tpm",
        show_default=f"{OPENAI_EMBEDDING_BUDGET[0]:,}",
        help="openai:<model> tokens per minute on OpenAI (none on a server of your own; 0: none).",
    )
    openai_rpm: Optional[int] = option(
        None,
        "--openai-rpm",
        show_default=f"{OPENAI_EMBEDDING_BUDGET[1]:,}",
        help="openai:<model> requests per minute on OpenAI (none on a server of your own; 0: none).",
    )
    openai_interval: Optional[float] = option(
        None, "--openai-interval", show_default="none", help="Seconds between OpenAI calls."
    )


class RunCommand(typer.core.TyperCommand):
    """`run`: its --help lists the rerankers registered now (the registry is read only when help is shown)."""

    def format_help(self, ctx, formatter) -> None:
        from ..base.registry import RERANKERS

        for param in self.params:
            if param.name == "rerank" and isinstance(param, typer.core.TyperOption):
                param.help = (
                    f"Rerank the first stage with a registered reranker, NAME or NAME:model: "
                    f"{', '.join(RERANKERS.names())}."
                )
        super().format_help(ctx, formatter)


@app.command("run", cls=RunCommand)
@grouped
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
    calls: ApiCalls = GROUP,
    budgets: ProviderBudgets = GROUP,
    index_ram: Optional[str] = typer.Option(
        None,
        "--index-ram",
        help="Dense: largest corpus matrix searched in RAM (8G, 512M; auto = half the free memory).",
    ),
    money: Money = GROUP,
    openai: OpenAIServer = GROUP,
    rerank_server: RerankServer = GROUP,
) -> None:
    """Evaluate a method on every (or the chosen) subset of a benchmark; one result file per subset."""
    from ..base import progress  # its console (and rich) is built on the first line printed, not on a refusal
    from ..metrics.protocol import check_tie_rule
    from ..runner.evaluation import run_benchmark
    from ..runner.run_request import RunRequest

    options = {
        "workers": workers,
        **given_options(rerank_top_k=rerank_top_k, store_prefix=store_prefix, index_ram=index_ram),
        **calls.given(),
        **budgets.given(),
        **openai.given(),
        **rerank_server.given(),
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
        progress.console.print(redact(line), markup=False, highlight=False, soft_wrap=True)

    from ..planning.run import plan_run

    table = money.gate(lambda: plan_run(request, echo))
    if table is None:
        return
    summary = money.within(lambda: run_benchmark(request, echo=echo), table)
    failed = summary.error()
    if failed is not None and summary.refusal() is not None and not summary.usage.as_dict():
        raise failed  # every subset refused on its data or options, nothing spent: that reason is the answer
    counts = {status: sum(o.status == status for o in summary.outcomes) for status in STATUSES}
    shown = ", ".join(f"{n} {status}" for status, n in counts.items() if n or status == "written")
    from ..providers.prices import spend_text

    spent = spend_text(summary.usage.summary(), summary.usage.billed(), summary.usage.served_labels())
    progress.console.print(
        f"{summary.method} on {summary.benchmark}: subsets {shown}; spent: {spent}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if failed is not None:
        raise failed  # its exit code is the failures' class, or 4 when other subsets are done

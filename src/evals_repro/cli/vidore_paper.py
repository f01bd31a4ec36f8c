"""`evals-repro grounding agreement|predict`, `evals-repro answer`, `evals-repro answer-report`:
ViDoRe v3 evaluated as its paper does (annotator agreement, visual grounding, judged answers)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import typer

from .application import app
from .costs import Money
from .groups import GROUP, ApiCalls, GeminiBudget, OptionGroup, grouped, option
from .options import (
    LIST_HELP,
    AnswerContext,
    BoxConventionChoice,
    budget_default,
    split_list,
    value_of,
)

grounding_app = typer.Typer(
    help="ViDoRe v3 visual grounding: annotator agreement (offline) and model boxes.", no_args_is_help=True
)
app.add_typer(grounding_app, name="grounding")

OUT_DIR = typer.Option(Path("results/vidore-v3-paper"), "--out-dir", help="Where results are written.")
LANGUAGE_HELP = "Query language to evaluate (default: each domain's native language)."
BENCHMARK = typer.Option("vidore-v3", "--benchmark", "-b", help="The ViDoRe v3 benchmark declaration to read.")
SUBSETS = typer.Option(None, "--subsets", "-s", help=f"Domains (default: all); {LIST_HELP}.")
CACHE_DIR = typer.Option(Path("cache"), "--cache-dir", help="Embedding, index and page caches.")
GENERATOR = typer.Option(None, "--generator", help="gemini:<model> | openai:<model>.")
TEMPERATURE = typer.Option(None, help="Generator temperature (default: the provider's).")
MAX_OUTPUT_TOKENS = typer.Option(None, "--max-output-tokens", help="Generator output cap.")


@dataclass
class Domains(OptionGroup):
    """Which ViDoRe v3 domains and queries: the declaration, its domains, the query language, the revision."""

    benchmark: str = BENCHMARK
    subsets: Optional[list[str]] = SUBSETS
    language: Optional[str] = option(None, "--language", help=LANGUAGE_HELP)
    revision: Optional[str] = option(None, help="Load another dataset revision than the declared pin.")

    def chosen(self) -> Optional[list[str]]:
        """The domains asked for (None: all)."""
        return split_list(self.subsets, "--subsets")


@dataclass
class Workers(OptionGroup):
    workers: int = option(4, min=1, help="Concurrent calls (at least 1).")


@dataclass
class OpenAIChatBudget(OptionGroup):
    openai_tpm: Optional[int] = option(
        None,
        "--openai-tpm",
        show_default=budget_default("openai", "tpm"),
        help="OpenAI-compatible tokens per minute; 0 = no budget (vLLM).",
    )
    openai_rpm: Optional[int] = option(
        None,
        "--openai-rpm",
        show_default=budget_default("openai", "rpm"),
        help="OpenAI-compatible requests per minute; 0 = no budget.",
    )
    openai_interval: Optional[float] = option(
        None,
        "--openai-interval",
        show_default=budget_default("openai", "interval"),
        help="Seconds between OpenAI-compatible calls.",
    )


@dataclass
class LlmCalls(OpenAIChatBudget, GeminiBudget, ApiCalls, Workers):
    """How `answer` and `grounding predict` call their generators and judges: concurrency, timeout,
    attempts, and the Gemini and OpenAI-compatible budgets (fields from the last base to the first)."""


def _fail_if_incomplete(result: dict, what: str) -> None:
    """Missing calls failed at the provider (they are retried by a rerun): exit 3, as every provider failure."""
    from ..base.errors import ProviderError

    if not result["complete"]:
        missing = result.get("missing")
        raise ProviderError(
            f"{what} incomplete" + (f": {missing} call(s) missing" if missing else ""),
            "rerun the same command: it retries only those",
        )


def _echo(line: str) -> None:
    from ..base.progress import console

    console.print(line, markup=False, highlight=False, soft_wrap=True)


@grounding_app.command("agreement")
@grouped
def agreement_command(
    domains: Domains = GROUP,
    out_dir: Path = OUT_DIR,
    cache_dir: Path = CACHE_DIR,
) -> None:
    """Inter-annotator agreement on bounding boxes: zone IoU and F1 per domain, modality and overall."""
    from ..vidore_paper.agreement import RESULT_NAME, AgreementRequest, agreement_table, run_agreement

    result = run_agreement(
        AgreementRequest(domains.benchmark, domains.chosen(), domains.language, domains.revision, out_dir, cache_dir),
        echo=_echo,
    )
    typer.echo(agreement_table(result))
    _echo(f"wrote {out_dir / (RESULT_NAME + '.json')} and {out_dir / (RESULT_NAME + '.md')}")


# `--models a b c`: the words after the first model arrive as extra arguments.
EXTRA_MODELS = {"allow_extra_args": True, "ignore_unknown_options": False}


@app.command("answer", context_settings=EXTRA_MODELS)
@grouped
def answer_command(
    ctx: typer.Context,
    domains: Domains = GROUP,
    context_choice: AnswerContext = typer.Option(
        AnswerContext.text, "--context", help="How context pages are shown to the generator."
    ),
    retriever: Optional[str] = typer.Option(None, "--retriever", help="Method whose top k is the context."),
    image_retriever: Optional[str] = typer.Option(None, "--image-retriever", help="Hybrid: pages shown as images."),
    text_retriever: Optional[str] = typer.Option(None, "--text-retriever", help="Hybrid: pages shown as text."),
    oracle: bool = typer.Option(False, "--oracle", help="Context = the annotated relevant pages."),
    top_k: int = typer.Option(5, "--top-k", help="Pages per retrieval stream."),
    no_context: bool = typer.Option(False, "--no-context", help="Panel without context: builds easy/hard labels."),
    models: Optional[list[str]] = typer.Option(
        None, "--models", help=f"The no-context panel, provider:model; {LIST_HELP} (several may follow one --models)."
    ),
    generator: Optional[str] = GENERATOR,
    judge: Optional[str] = typer.Option(None, "--judge", help="gemini:<model> | openai:<model>."),
    temperature: Optional[float] = TEMPERATURE,
    max_output_tokens: Optional[int] = MAX_OUTPUT_TOKENS,
    judge_max_output_tokens: Optional[int] = typer.Option(None, "--judge-max-output-tokens", help="Judge output cap."),
    out_dir: Path = OUT_DIR,
    run_name: Optional[str] = typer.Option(None, "--run-name", help="Run folder (default from the pipeline)."),
    labels: Optional[Path] = typer.Option(None, "--labels", help="Easy/hard labels (default <out-dir>/easy-hard)."),
    calls: LlmCalls = GROUP,
    store_prefix: Optional[str] = typer.Option(None, "--store-prefix", help="Mixedbread store name prefix."),
    cache_dir: Path = CACHE_DIR,
    money: Money = GROUP,
) -> None:
    """Answer every query from a retrieval pipeline's pages, judge against the gold answer (resumable)."""
    from ..base.errors import UsageError
    from ..vidore_paper.answer_request import AnswerRequest, checked_request
    from ..vidore_paper.llm import GenerationSettings
    from ..vidore_paper.pipeline import Pipeline

    if ctx.args and not models:
        raise UsageError(f"unexpected argument(s) {' '.join(ctx.args)}", "name panel models with --models a b c")
    panel = split_list([m for value in [*(models or []), *ctx.args] for m in value.split()]) or []
    pipeline = Pipeline(value_of(context_choice), retriever, image_retriever, text_retriever, oracle, no_context, top_k)
    options = {**calls.given(), **({"store_prefix": store_prefix} if store_prefix is not None else {})}
    request = AnswerRequest(
        benchmark=domains.benchmark,
        subsets=domains.chosen(),
        language=domains.language,
        revision=domains.revision,
        pipeline=pipeline,
        generator=generator,
        judge=judge,
        panel=panel,
        generation=GenerationSettings(temperature, max_output_tokens),
        judge_generation=GenerationSettings(None, judge_max_output_tokens),
        out_dir=out_dir,
        run_name=run_name,
        labels=labels,
        workers=calls.workers,
        cache_dir=cache_dir,
        options=options,
    )
    if not money.plan:
        checked_request(request)  # a bad request or a missing key is refused before any dataset code loads
    from ..planning.answer import plan_answer
    from ..vidore_paper.answer import answer_table, run_answer

    table = money.gate(lambda: plan_answer(request))
    if table is None:
        return
    result = money.within(lambda: run_answer(request, echo=_echo), table)
    typer.echo(answer_table([result]))
    _fail_if_incomplete(result, "answer run")


@app.command("answer-report")
def answer_report_command(
    out_dir: Path = OUT_DIR,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Also write the table (markdown)."),
) -> None:
    """Every answer run under --out-dir in one table (accuracy x100): the paper's answer table."""
    from ..base.io import check_output_file, write_output_text
    from ..vidore_paper.answer import answer_table, collect_results

    if output is not None:
        check_output_file(output, "--output")
    text = answer_table(collect_results(out_dir))
    typer.echo(text)
    if output is not None:
        write_output_text(output, text, "--output")


@grounding_app.command("predict")
@grouped
def predict_command(
    ctx: typer.Context,
    domains: Domains = GROUP,
    generator: Optional[str] = GENERATOR,
    box_convention: BoxConventionChoice = typer.Option(
        BoxConventionChoice.auto,
        "--box-convention",
        help="Box order and grid the model is asked and read in (auto: from the model name; see README).",
    ),
    box_scale: Optional[float] = typer.Option(
        None,
        "--box-scale",
        help="Grid of x-first boxes, 1000 if not given (0 = page pixels); means --box-convention xyxy.",
    ),
    min_pixels: Optional[int] = typer.Option(
        None, "--min-pixels", help="qwen2.5-vl: the server's image-processor min_pixels (default 3136)."
    ),
    max_pixels: Optional[int] = typer.Option(
        None, "--max-pixels", help="qwen2.5-vl: the server's image-processor max_pixels (default 12845056)."
    ),
    temperature: Optional[float] = TEMPERATURE,
    max_output_tokens: Optional[int] = MAX_OUTPUT_TOKENS,
    out_dir: Path = OUT_DIR,
    run_name: Optional[str] = typer.Option(None, "--run-name", help="Run folder (default: the generator)."),
    calls: LlmCalls = GROUP,
    cache_dir: Path = CACHE_DIR,
) -> None:
    """Answer with inline boxes over each query's relevant pages only (unlike the paper: the pages annotators
    rejected are not published); score against every annotator (resumable)."""
    from ..vidore_paper.grounding import GroundingRequest, grounding_table, run_grounding
    from ..vidore_paper.llm import GenerationSettings

    options = calls.given()
    result = run_grounding(
        GroundingRequest(
            benchmark=domains.benchmark,
            subsets=domains.chosen(),
            language=domains.language,
            revision=domains.revision,
            generator=generator,
            generation=GenerationSettings(temperature, max_output_tokens),
            box_convention=value_of(box_convention),
            box_scale=box_scale,
            min_pixels=min_pixels,
            max_pixels=max_pixels,
            out_dir=out_dir,
            run_name=run_name,
            workers=calls.workers,
            cache_dir=cache_dir,
            options=options,
        ),
        echo=_echo,
    )
    typer.echo(grounding_table(result))
    _fail_if_incomplete(result, "grounding run")

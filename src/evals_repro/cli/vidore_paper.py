"""`evals-repro grounding agreement|predict`, `evals-repro answer`, `evals-repro answer-report`:
ViDoRe v3 evaluated as its paper does (annotator agreement, visual grounding, judged answers)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app

grounding_app = typer.Typer(
    help="ViDoRe v3 visual grounding: annotator agreement (offline) and model boxes.", no_args_is_help=True
)
app.add_typer(grounding_app, name="grounding")

OUT_DIR = typer.Option(Path("results/vidore-v3-paper"), "--out-dir", help="Where results are written.")
LANGUAGE_HELP = "Query language to evaluate (default: each domain's native language)."


def _echo(line: str) -> None:
    from ..progress import console

    console.print(line, markup=False, highlight=False, soft_wrap=True)


@grounding_app.command("agreement")
def agreement_command(
    benchmark: str = typer.Option("vidore-v3", "--benchmark", "-b"),
    subsets: Optional[list[str]] = typer.Option(None, "--subsets", "-s", help="Domains (default: all)."),
    language: Optional[str] = typer.Option(None, "--language", help=LANGUAGE_HELP),
    revision: Optional[str] = typer.Option(None, help="Load another dataset revision than the declared pin."),
    out_dir: Path = OUT_DIR,
    cache_dir: Path = typer.Option(Path("cache"), "--cache-dir"),
) -> None:
    """Inter-annotator agreement on bounding boxes: zone IoU and F1 per domain, modality and overall."""
    from ..vidore_paper.agreement import RESULT_NAME, AgreementRequest, agreement_table, run_agreement

    result = run_agreement(
        AgreementRequest(benchmark, subsets or None, language, revision, out_dir, cache_dir), echo=_echo
    )
    typer.echo(agreement_table(result))
    _echo(f"wrote {out_dir / (RESULT_NAME + '.json')} and {out_dir / (RESULT_NAME + '.md')}")


# `--models a b c`: the words after the first model arrive as extra arguments.
EXTRA_MODELS = {"allow_extra_args": True, "ignore_unknown_options": False}


def _provider_options(**values) -> dict:
    from . import given_options

    return given_options(**values)


@app.command("answer", context_settings=EXTRA_MODELS)
def answer_command(
    ctx: typer.Context,
    benchmark: str = typer.Option("vidore-v3", "--benchmark", "-b"),
    subsets: Optional[list[str]] = typer.Option(None, "--subsets", "-s", help="Domains (default: all)."),
    language: Optional[str] = typer.Option(None, "--language", help=LANGUAGE_HELP),
    revision: Optional[str] = typer.Option(None, help="Load another dataset revision than the declared pin."),
    context: str = typer.Option("text", "--context", help="text | images | hybrid: how context pages are shown."),
    retriever: Optional[str] = typer.Option(None, "--retriever", help="Method whose top k is the context."),
    image_retriever: Optional[str] = typer.Option(None, "--image-retriever", help="Hybrid: pages shown as images."),
    text_retriever: Optional[str] = typer.Option(None, "--text-retriever", help="Hybrid: pages shown as text."),
    oracle: bool = typer.Option(False, "--oracle", help="Context = the annotated relevant pages."),
    top_k: int = typer.Option(5, "--top-k", help="Pages per retrieval stream."),
    no_context: bool = typer.Option(False, "--no-context", help="Panel without context: builds easy/hard labels."),
    models: Optional[list[str]] = typer.Option(None, "--models", help="The no-context panel: provider:model ..."),
    generator: Optional[str] = typer.Option(None, "--generator", help="gemini:<model> | openai:<model>."),
    judge: Optional[str] = typer.Option(None, "--judge", help="gemini:<model> | openai:<model>."),
    temperature: Optional[float] = typer.Option(None, help="Generator temperature (default: the provider's)."),
    max_output_tokens: Optional[int] = typer.Option(None, "--max-output-tokens", help="Generator output cap."),
    judge_max_output_tokens: Optional[int] = typer.Option(None, "--judge-max-output-tokens"),
    out_dir: Path = OUT_DIR,
    run_name: Optional[str] = typer.Option(None, "--run-name", help="Run folder (default from the pipeline)."),
    labels: Optional[Path] = typer.Option(None, "--labels", help="Easy/hard labels (default <out-dir>/easy-hard)."),
    workers: int = typer.Option(4, help="Concurrent calls."),
    timeout: Optional[float] = typer.Option(None, help="API request timeout in seconds."),
    max_attempts: Optional[int] = typer.Option(None, "--max-attempts", help="Attempts per call (default 6)."),
    gemini_tpm: Optional[int] = typer.Option(None, "--gemini-tpm"),
    gemini_rpm: Optional[int] = typer.Option(None, "--gemini-rpm"),
    gemini_interval: Optional[float] = typer.Option(None, "--gemini-interval"),
    openai_tpm: Optional[int] = typer.Option(None, "--openai-tpm", help="0 = no budget (a vLLM replica)."),
    openai_rpm: Optional[int] = typer.Option(None, "--openai-rpm"),
    openai_interval: Optional[float] = typer.Option(None, "--openai-interval"),
    store_prefix: Optional[str] = typer.Option(None, "--store-prefix", help="Mixedbread store name prefix."),
    cache_dir: Path = typer.Option(Path("cache"), "--cache-dir"),
) -> None:
    """Answer every query from a retrieval pipeline's pages, judge against the gold answer (resumable)."""
    from ..errors import UsageError
    from ..vidore_paper.answer import AnswerRequest, answer_table, run_answer
    from ..vidore_paper.contexts import Pipeline
    from ..vidore_paper.llm import GenerationSettings

    if ctx.args and not models:
        raise UsageError(f"unexpected argument(s) {' '.join(ctx.args)}", "name panel models with --models a b c")
    panel = [m for value in [*(models or []), *ctx.args] for m in value.replace(",", " ").split() if m]
    pipeline = Pipeline(context, retriever, image_retriever, text_retriever, oracle, no_context, top_k)
    options = _provider_options(
        workers=workers,
        timeout=timeout,
        max_attempts=max_attempts,
        gemini_tpm=gemini_tpm,
        gemini_rpm=gemini_rpm,
        gemini_interval=gemini_interval,
        openai_tpm=openai_tpm,
        openai_rpm=openai_rpm,
        openai_interval=openai_interval,
        store_prefix=store_prefix,
    )
    result = run_answer(
        AnswerRequest(
            benchmark=benchmark,
            subsets=subsets or None,
            language=language,
            revision=revision,
            pipeline=pipeline,
            generator=generator,
            judge=judge,
            panel=panel,
            generation=GenerationSettings(temperature, max_output_tokens),
            judge_generation=GenerationSettings(None, judge_max_output_tokens),
            out_dir=out_dir,
            run_name=run_name,
            labels=labels,
            workers=workers,
            cache_dir=cache_dir,
            options=options,
        ),
        echo=_echo,
    )
    typer.echo(answer_table([result]))
    if not result["complete"]:
        raise typer.Exit(1)


@app.command("answer-report")
def answer_report_command(
    out_dir: Path = OUT_DIR,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Also write the table (markdown)."),
) -> None:
    """Every answer run under --out-dir in one table (accuracy x100): the paper's answer table."""
    from ..io import atomic_write_text
    from ..vidore_paper.answer import answer_table, collect_results

    text = answer_table(collect_results(out_dir))
    typer.echo(text)
    if output is not None:
        atomic_write_text(output, text)


@grounding_app.command("predict")
def predict_command(
    benchmark: str = typer.Option("vidore-v3", "--benchmark", "-b"),
    subsets: Optional[list[str]] = typer.Option(None, "--subsets", "-s", help="Domains (default: all)."),
    language: Optional[str] = typer.Option(None, "--language", help=LANGUAGE_HELP),
    revision: Optional[str] = typer.Option(None, help="Load another dataset revision than the declared pin."),
    generator: Optional[str] = typer.Option(None, "--generator", help="gemini:<model> | openai:<model>."),
    box_scale: float = typer.Option(1000.0, "--box-scale", help="Grid of the model's boxes (0 = page pixels)."),
    temperature: Optional[float] = typer.Option(None, help="Generator temperature (default: the provider's)."),
    max_output_tokens: Optional[int] = typer.Option(None, "--max-output-tokens", help="Generator output cap."),
    out_dir: Path = OUT_DIR,
    run_name: Optional[str] = typer.Option(None, "--run-name", help="Run folder (default: the generator)."),
    workers: int = typer.Option(4, help="Concurrent calls."),
    timeout: Optional[float] = typer.Option(None, help="API request timeout in seconds."),
    max_attempts: Optional[int] = typer.Option(None, "--max-attempts", help="Attempts per call (default 6)."),
    gemini_tpm: Optional[int] = typer.Option(None, "--gemini-tpm"),
    gemini_rpm: Optional[int] = typer.Option(None, "--gemini-rpm"),
    gemini_interval: Optional[float] = typer.Option(None, "--gemini-interval"),
    openai_tpm: Optional[int] = typer.Option(None, "--openai-tpm", help="0 = no budget (a vLLM replica)."),
    openai_rpm: Optional[int] = typer.Option(None, "--openai-rpm"),
    openai_interval: Optional[float] = typer.Option(None, "--openai-interval"),
    cache_dir: Path = typer.Option(Path("cache"), "--cache-dir"),
) -> None:
    """Answer with inline boxes over each query's annotated pages; score against every annotator (resumable)."""
    from ..vidore_paper.grounding import GroundingRequest, grounding_table, run_grounding
    from ..vidore_paper.llm import GenerationSettings

    options = _provider_options(
        workers=workers,
        timeout=timeout,
        max_attempts=max_attempts,
        gemini_tpm=gemini_tpm,
        gemini_rpm=gemini_rpm,
        gemini_interval=gemini_interval,
        openai_tpm=openai_tpm,
        openai_rpm=openai_rpm,
        openai_interval=openai_interval,
    )
    result = run_grounding(
        GroundingRequest(
            benchmark=benchmark,
            subsets=subsets or None,
            language=language,
            revision=revision,
            generator=generator,
            generation=GenerationSettings(temperature, max_output_tokens),
            box_scale=box_scale,
            out_dir=out_dir,
            run_name=run_name,
            workers=workers,
            cache_dir=cache_dir,
            options=options,
        ),
        echo=_echo,
    )
    typer.echo(grounding_table(result))
    if not result["complete"]:
        raise typer.Exit(1)

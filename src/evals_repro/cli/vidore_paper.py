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

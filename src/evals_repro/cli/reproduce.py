"""`evals-repro reproduce`: the published figures of our sources beside what this harness computes."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .application import app
from .costs import MAX_COST, PRICES
from .run import RESULTS_DIR_HELP

MATRIX_SUFFIXES = (".md", ".csv", ".json", ".html")


@app.command("reproduce")
def reproduce_command(
    sources: Optional[list[str]] = typer.Argument(
        None, help="Sources to check (default: all): rcp-card, vidore-v3-paper, bm25s-beir."
    ),
    run: bool = typer.Option(
        False,
        "--run",
        help="Compute what is free (the card's replay and claims, BM25, local models with a GPU) and, under "
        "--max-cost, run the paid models; without it, only read results on disk and the Hub cache.",
    ),
    max_cost: Optional[float] = MAX_COST,
    prices: Optional[Path] = PRICES,
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Also write the matrix: .md, .csv, .json or a self-contained .html page."
    ),
    results_dir: Path = typer.Option(Path("results"), "--results-dir", help=RESULTS_DIR_HELP),
    cache_dir: Path = typer.Option(Path("cache"), "--cache-dir", help="Embedding and index caches (as `run`'s)."),
    snapshot: Optional[Path] = typer.Option(
        None, "--snapshot", help="Read a local copy of the rcp-ndcg release (same layout) instead of the Hub."
    ),
) -> None:
    """Every published figure of our sources: reproduced, differs, not run (with the command and cost) or cannot
    run here (what it needs), and one summary line: N of M reproduced."""
    from ..base.errors import UsageError, choices
    from ..base.io import check_output_file
    from ..reproduce.figures import load_sources

    if output is not None:
        if output.suffix.lower() not in MATRIX_SUFFIXES:
            raise UsageError(
                f"--output {output}: unknown file type '{output.suffix or '(none)'}'",
                f"name the file with one of {choices(MATRIX_SUFFIXES)}",
            )
        check_output_file(output, "--output")
    if max_cost is not None and not run:
        raise UsageError("--max-cost bounds what --run pays for", "add --run, or drop --max-cost")
    names = [name for raw in sources or [] for name in raw.split(",") if name.strip()]
    load_sources(names)  # an unknown source is refused before anything else is read
    if snapshot is not None and not snapshot.is_dir():
        raise UsageError(f"--snapshot {snapshot}: not a folder", "give the folder of a local copy of the release")

    from ..base import progress
    from ..base.io import write_output_text
    from ..providers.keys import redact
    from ..reproduce.build import ReproduceRequest, reproduce

    def say(line: str) -> None:
        progress.console.print(redact(line), markup=False, highlight=False, soft_wrap=True)

    request = ReproduceRequest(names or None, run, max_cost, results_dir, cache_dir, snapshot, prices)
    matrix = reproduce(request, say)
    typer.echo(matrix.markdown(), nl=False)
    if output is not None:
        suffix = output.suffix.lower()
        text = {".csv": matrix.csv, ".json": matrix.as_json, ".html": matrix.html}.get(suffix, matrix.markdown)()
        write_output_text(output, text, "--output")
        typer.echo(f"wrote {output}", err=True)

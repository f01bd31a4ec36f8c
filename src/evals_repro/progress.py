"""Rich progress bars for every loop a user waits on (to stderr, so stdout stays pasteable)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console(stderr=True)


def _disabled() -> bool:
    """Bars only on a terminal: in logs and pipes they would print empty or repeated lines."""
    return os.environ.get("EVALS_REPRO_NO_PROGRESS", "") not in ("", "0") or not console.is_terminal


@contextlib.contextmanager
def progress_bar(description: str, total: int | None) -> Iterator[Bar]:
    """A single labelled bar; `bar.advance(n)` moves it. Silent when EVALS_REPRO_NO_PROGRESS=1."""
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=_disabled(),
    )
    with progress:
        task = progress.add_task(description, total=total)
        yield Bar(progress, task)


class Bar:
    def __init__(self, progress: Progress, task) -> None:
        self._progress = progress
        self._task = task

    def advance(self, amount: int = 1) -> None:
        self._progress.advance(self._task, amount)

    def describe(self, description: str) -> None:
        self._progress.update(self._task, description=description)

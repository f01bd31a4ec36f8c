"""Rich progress bars for every loop a user waits on (to stderr, so stdout stays pasteable).

rich is imported when the first bar or console line is shown (`console` is built on first access), so a
command refused before any work never pays for it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


@cache
def _console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


def __getattr__(name: str) -> Any:
    """`progress.console`: the one stderr console (bars and the CLI's lines), built on first access."""
    if name == "console":
        return _console()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _disabled() -> bool:
    """Bars only on a terminal: in logs and pipes they would print empty or repeated lines."""
    return os.environ.get("EVALS_REPRO_NO_PROGRESS", "") not in ("", "0") or not _console().is_terminal


@contextlib.contextmanager
def progress_bar(description: str, total: int | None) -> Iterator[Bar]:
    """A single labelled bar; `bar.advance(n)` moves it. Silent when EVALS_REPRO_NO_PROGRESS=1."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=_console(),
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

"""What every component is built with: the benchmark, cache folder, content kind, options and usage.

It lives apart from the components so that embedders, retrievers, rerankers and stores can all
take it without importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .usage import Usage


@dataclass
class MethodContext:
    """What a method needs from the run: where to cache, which content, tuning options, usage counters."""

    benchmark: str
    cache_dir: Path = Path("cache")
    content: str = "markdown"  # or "images"
    options: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    planning: bool = False  # `--plan`: components are built without keys or clients and send nothing

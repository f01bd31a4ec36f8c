"""What `evals-repro answer` is asked, checked before anything heavy is imported: the request, its run folder, and
its generators, judge and keys (a refusal of a bad request or a missing key loads no dataset or benchmark code)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import UsageError
from .llm import GenerationSettings, ModelSpec, parse_model, require_keys
from .pipeline import Pipeline

PANEL_DIR = "easy-hard"


@dataclass
class AnswerRequest:
    benchmark: str = "vidore-v3"
    subsets: list[str] | None = None
    language: str | None = None  # None: each domain's native language
    revision: str | None = None
    pipeline: Pipeline = field(default_factory=Pipeline)
    generator: str | None = None
    judge: str | None = None
    panel: list[str] = field(default_factory=list)  # --no-context --models ...
    generation: GenerationSettings = field(default_factory=GenerationSettings)
    judge_generation: GenerationSettings = field(default_factory=GenerationSettings)
    out_dir: Path = Path("results/vidore-v3-paper")
    run_name: str | None = None
    labels: Path | None = None  # default: <out-dir>/easy-hard/labels.json
    workers: int = 4
    cache_dir: Path = Path("cache")
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def panel_mode(self) -> bool:
        return self.pipeline.none


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+@=-]+", "_", text).strip("_") or "run"


def run_dir_of(request: AnswerRequest, generator: ModelSpec | None) -> Path:
    if request.panel_mode:
        return Path(request.out_dir) / PANEL_DIR
    name = request.run_name or f"{request.pipeline.label}__{generator.name if generator else ''}"
    return Path(request.out_dir) / "answer" / safe_name(name)


def parse_request(request: AnswerRequest) -> tuple[list[ModelSpec], ModelSpec]:
    """The request checked (no key needed): its generators and its judge."""
    if request.workers < 1:
        raise UsageError(f"--workers {request.workers} must be at least 1", "use e.g. 4")
    if not request.judge:
        raise UsageError(
            "--judge is required",
            "e.g. --judge openai:gpt-5.2 (the paper does not name its judge model: report the one you use)",
        )
    request.pipeline.validate()
    if request.panel_mode:
        if request.generator or not request.panel:
            raise UsageError(
                "--no-context builds the easy/hard label with a panel: give --models, not --generator",
                "e.g. --no-context --models gemini:gemini-3-pro-preview openai:gpt-5.2",
            )
        generators = [parse_model(m, "--models") for m in request.panel]
    else:
        if request.panel:
            raise UsageError("--models goes with --no-context", "give one --generator for a pipeline run")
        if not request.generator:
            raise UsageError("--generator is required", "e.g. --generator gemini:gemini-3-pro-preview")
        generators = [parse_model(request.generator, "--generator")]
    return generators, parse_model(request.judge, "--judge")


def checked_request(request: AnswerRequest) -> tuple[list[ModelSpec], ModelSpec]:
    """The request checked and its keys present: its generators and its judge (UsageError, then the missing keys)."""
    generators, judge = parse_request(request)
    require_keys([*generators, judge], request.pipeline.key_variables())
    return generators, judge

"""A pipeline for `evals-repro answer` (which pages a generator sees) and the keys it needs: light, so a bad
request or a missing key is refused before the dataset and rendering code in contexts.py is imported."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base.errors import UsageError

if TYPE_CHECKING:
    from ..methods.pipeline import PipelineSpec

CONTEXTS = ("text", "images", "hybrid")
KIND = {"text": "text", "images": "image"}


@dataclass(frozen=True)
class Pipeline:
    context: str = "text"  # text | images | hybrid
    retriever: str | None = None  # text / images contexts
    image_retriever: str | None = None  # hybrid
    text_retriever: str | None = None  # hybrid
    oracle: bool = False
    none: bool = False  # no context at all
    top_k: int = 5

    def streams(self) -> list[tuple[str, str]]:
        """(kind, method) per stream, in the order shown: image stream first in hybrid."""
        if self.context == "hybrid":
            return [("image", self.image_retriever or ""), ("text", self.text_retriever or "")]
        return [(KIND[self.context], self.retriever or "")]

    @property
    def needs_images(self) -> bool:
        return not self.none and self.context in ("images", "hybrid")

    @property
    def label(self) -> str:
        if self.none:
            return "no-context"
        source = "oracle" if self.oracle else "+".join(method for _, method in self.streams())
        return f"{self.context}__{source}" + ("" if self.oracle or self.top_k == 5 else f"@{self.top_k}")

    def describe(self) -> dict[str, Any]:
        if self.none:
            return {"context": "none"}
        return {
            "context": self.context,
            "source": "oracle" if self.oracle else "retrieval",
            "streams": [] if self.oracle else [{"kind": k, "method": m} for k, m in self.streams()],
            "top_k": None if self.oracle else self.top_k,
        }

    def key_variables(self) -> list[str]:
        """The API keys the retrieval streams need (first stages and rerankers), checked before any work."""
        needed: list[str] = []
        for kind, method in [] if self.none or self.oracle else self.streams():
            needed += [k for k in spec_of(method, kind).key_envs() if k not in needed]
        return needed

    def validate(self) -> None:
        if self.none:
            return
        if self.context not in CONTEXTS:
            raise UsageError(f"--context {self.context} is not valid", f"choose from {', '.join(CONTEXTS)}")
        if self.top_k < 1:
            raise UsageError(f"--top-k {self.top_k} must be at least 1", "the paper uses 5")
        if self.oracle:
            if self.retriever or self.image_retriever or self.text_retriever:
                raise UsageError("--oracle takes no retriever", "drop --retriever/--image-retriever/--text-retriever")
            return
        if self.context == "hybrid":
            if not (self.image_retriever and self.text_retriever) or self.retriever:
                raise UsageError(
                    "--context hybrid needs --image-retriever and --text-retriever (not --retriever)",
                    "e.g. --image-retriever voyage-multimodal-3.5 --text-retriever bm25",
                )
        elif not self.retriever or self.image_retriever or self.text_retriever:
            raise UsageError(
                f"--context {self.context} needs --retriever (or --oracle)",
                "e.g. --retriever bm25; --image-retriever/--text-retriever are for --context hybrid",
            )
        for kind, method in self.streams():
            spec_of(method, kind)


def spec_of(method: str, kind: str) -> PipelineSpec:
    """A stream's pipeline: the image stream retrieves over page images when all its first stages can."""
    from ..methods.pipeline import PipelineSpec, first_stage_entry

    spec = PipelineSpec.parse(method)
    from ..methods.plugins import accepted_contents

    entries = [first_stage_entry(name) for name in spec.first_stage]
    accepted = [None if e is None else (accepted_contents(e) or e.contents) for e in entries]
    if kind == "image" and all(a is not None and "images" in a for a in accepted):
        return PipelineSpec.parse(method, "images")
    return spec

"""The shared loop of every API embedder: plan batches, run them on a few threads under the provider's
throttle and retries, check every answer, and return unit rows in item order or raise (never a partial matrix).

A subclass says how to estimate an item's cost, how to send one batch and how to read the vectors back.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any

import numpy as np

from ..context import MethodContext
from ..errors import ProviderError, UsageError
from ..progress import progress_bar
from ..providers.batching import estimate_tokens, plan_batches
from ..providers.retry import call_with_retries
from ..providers.settings import ProviderSettings, provider_settings
from ..rendering import PageStyle
from .base import EmbedItem, InputType, normalise

DEFAULT_WORKERS = 4


class ApiEmbedder(ABC):
    provider: str = ""
    supports_images = False
    text_style = PageStyle.LABELLED

    def __init__(
        self,
        name: str,
        model: str,
        ctx: MethodContext,
        *,
        dimension: int | None = None,
        max_batch_items: int | None = None,
        max_batch_tokens: int | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.dimension = dimension
        self.usage = ctx.usage
        settings = provider_settings(self.provider, ctx.options)
        self.settings: ProviderSettings = replace(
            settings,
            max_batch_items=min(settings.max_batch_items, max_batch_items or settings.max_batch_items),
            max_batch_tokens=min(settings.max_batch_tokens, max_batch_tokens or settings.max_batch_tokens),
        )
        self.workers = int(ctx.options.get("workers") or DEFAULT_WORKERS)
        if self.workers < 1:
            raise UsageError(f"option workers={self.workers} is below 1", "give 1 or more")
        self.client = self.make_client(self.settings)  # a missing key fails here, before any request

    # -- what a provider supplies -------------------------------------------------------------------
    @abstractmethod
    def make_client(self, settings: ProviderSettings) -> Any:
        """The provider's SDK client (retries off); raises ConfigurationError when the key is missing."""

    def cost(self, item: EmbedItem, input_type: InputType) -> int:
        """Estimated tokens of one item (what the throttle books and the batch plan sums)."""
        return estimate_tokens(item.text)

    @abstractmethod
    def request(self, items: list[EmbedItem], input_type: InputType) -> tuple[list, int | None]:
        """Send one batch; return (vectors as rows, tokens the provider reported or None)."""

    def plan_cost(self, item: EmbedItem, input_type: InputType) -> int:
        """What the batch plan sums against `batch_limits` (tokens unless a provider caps something else)."""
        return self.cost(item, input_type)

    def batch_limits(self, items: list[EmbedItem]) -> tuple[int, int]:
        """(max items, max summed plan cost) per request."""
        return self.settings.max_batch_items, self.settings.max_batch_tokens

    def batch_settings(self, items: list[EmbedItem]) -> ProviderSettings:
        """Settings (and so the throttle) for a batch; image batches may have their own budget."""
        return self.settings

    # -- the shared loop ----------------------------------------------------------------------------
    def check_items(self, items: list[EmbedItem]) -> None:
        for position, item in enumerate(items):
            if item.image is not None and not self.supports_images:
                raise UsageError(
                    f"{self.name} embeds text only (item {position} is an image)",
                    "use --content markdown or an image-capable method",
                )
            if item.image is None and item.text is None:
                raise UsageError(f"{self.name}: item {position} has neither text nor image", "check the subset")

    def _one_batch(self, items: list[EmbedItem], input_type: InputType, tokens: int) -> np.ndarray:
        def send() -> tuple[np.ndarray, int | None]:
            rows, reported = self.request(items, input_type)
            return self._checked(rows, len(items)), reported

        matrix, _ = call_with_retries(
            self.batch_settings(items),
            send,
            usage=self.usage,
            tokens=tokens,
            items=len(items),
            what=f"{self.model} embed",
            reported_tokens=lambda result: result[1],
        )
        return matrix

    def _checked(self, rows, expected: int) -> np.ndarray:
        """Rows as a float32 matrix, or ProviderError when the answer does not fit the request."""
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise ProviderError(
                f"{self.provider} {self.model}: malformed embeddings ({exc})",
                "the provider or proxy answered something unexpected",
            ) from None
        if matrix.ndim != 2 or matrix.shape[0] != expected or matrix.shape[1] == 0:
            raise ProviderError(
                f"{self.provider} {self.model}: asked for {expected} embeddings, got shape {matrix.shape}",
                "the provider or proxy answered something unexpected; nothing was saved",
            )
        if self.dimension and matrix.shape[1] != self.dimension:
            raise ProviderError(
                f"{self.provider} {self.model}: asked for dimension {self.dimension}, got {matrix.shape[1]}",
                "check the model and --dimension",
            )
        if not np.isfinite(matrix).all():
            raise ProviderError(
                f"{self.provider} {self.model}: embeddings contain NaN or infinity",
                "the provider answered garbage; retry later",
            )
        return matrix

    def embed(self, items: list[EmbedItem], input_type: InputType) -> np.ndarray:
        """Embed any number of items; unit float32 rows in item order, or an error (no partial result)."""
        if input_type not in ("query", "document"):
            raise UsageError(f"input type '{input_type}' is not query or document", "use query or document")
        self.check_items(items)
        if not items:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        costs = [self.cost(item, input_type) for item in items]
        plan_costs = [self.plan_cost(item, input_type) for item in items]
        plan = plan_batches(plan_costs, *self.batch_limits(items))
        parts: list[np.ndarray | None] = [None] * len(plan)
        with (
            progress_bar(f"{self.name} {input_type}s", total=len(items)) as bar,
            ThreadPoolExecutor(max_workers=min(self.workers, len(plan))) as pool,
        ):
            futures = {
                pool.submit(self._one_batch, [items[i] for i in batch], input_type, sum(costs[i] for i in batch)): index
                for index, batch in enumerate(plan)
            }
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    if future.exception() is not None:
                        for other in pending:
                            other.cancel()
                        raise future.exception()
                    parts[futures[future]] = future.result()
                    bar.advance(len(plan[futures[future]]))
        widths = {part.shape[1] for part in parts}
        if len(widths) != 1:
            raise ProviderError(
                f"{self.provider} {self.model}: batches came back with dimensions {sorted(widths)}",
                "the provider changed the model mid-run; rerun",
            )
        return normalise(np.vstack(parts))

    def describe(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "dimension": self.dimension}

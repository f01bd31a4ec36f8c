"""The shared loop of every API embedder: plan batches, run them on a few threads under the provider's
throttle and retries, check every answer, and return unit rows in item order or raise (never a partial matrix).

Paid-for rows are never held back: `embed(..., on_rows=f)` calls `f(positions, rows)` from the worker
thread the moment each request's answer is checked, so a caller (the embedding cache) can persist them
before the rest of the call finishes. A subclass says how to estimate an item's cost, how to send one
batch and how to read the vectors back.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from ..base.context import MethodContext
from ..base.errors import ProviderError, UsageError
from ..base.progress import progress_bar
from ..base.rendering import PageStyle
from ..providers.batching import estimate_tokens, plan_batches
from ..providers.errors_map import MalformedAnswer
from ..providers.plan import Guess, Plan, text_prior
from ..providers.retry import call_with_retries
from ..providers.settings import ProviderSettings, provider_settings, workers_option
from ..providers.throttle import batch_token_cap
from .base import EmbedItem, InputType, normalise

if TYPE_CHECKING:
    import numpy as np

DEFAULT_WORKERS = 4

RowsCallback = Callable[[list[int], "np.ndarray"], None]  # (item positions, their unit rows)


class ReportedTokens(int):
    """The tokens a provider reported for a request, with the billed units it reported beside them
    (Voyage multimodal: text tokens and image pixels), which `billed_units` then prefers to estimates."""

    units: dict[str, float]

    def __new__(cls, tokens: int, units: dict[str, float]) -> ReportedTokens:
        made = super().__new__(cls, tokens)
        made.units = units
        return made


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
        self.workers = workers_option(ctx.options, DEFAULT_WORKERS)
        # A missing key fails here, before any request; a plan (`--plan`) needs neither key nor client.
        self.client: Any = None if ctx.planning else self.make_client(self.settings)

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

    def billed_units(self, items: list[EmbedItem], tokens: int) -> dict[str, float]:
        """What one request bills, from its tokens (reported, or estimated for a plan or an estimate)."""
        return {"input_tokens": tokens}

    def paid(self) -> bool:
        """Whether requests cost money (priced and held to --max-cost); a server of your own does not."""
        return True

    def batch_settings(self, items: list[EmbedItem]) -> ProviderSettings:
        """Settings (and so the throttle) for a batch; image batches may have their own budget."""
        return self.settings

    # -- the shared loop ----------------------------------------------------------------------------
    def _budget_limits(self, items: list[EmbedItem], costs: list[int], plan_costs: list[int]) -> tuple[int, int]:
        """Batch limits, shrunk so that a request always fits the per-minute budget with room to spare.

        Batches are capped at half the item budget and, through `batch_token_cap`, at half the token
        budget; an item too large on its own for the whole budget is refused there."""
        max_items, max_plan = self.batch_limits(items)
        settings = self.batch_settings(items)
        if settings.items_per_minute:
            max_items = max(1, min(max_items, settings.items_per_minute // 2))
        cap = batch_token_cap(settings, costs, self.name)
        if cap is not None and plan_costs == costs:  # planned by tokens (not, e.g., by image bytes)
            max_plan = max(1, min(max_plan, cap))
        return max_items, max_plan

    def check_items(self, items: list[EmbedItem]) -> None:
        for position, item in enumerate(items):
            if item.image is not None and not self.supports_images:
                raise UsageError(
                    f"{self.name} embeds text only (item {position} is an image)",
                    "use --content markdown or an image-capable method",
                )
            if item.image is None and item.text is None:
                raise UsageError(f"{self.name}: item {position} has neither text nor image", "check the subset")

    def plan(self, items: list[EmbedItem], input_type: InputType, plan: Plan, what: str = "") -> None:
        """Count the requests `embed(items)` would send, batched exactly as it batches them."""
        self.check_items(items)
        if not items:
            return
        costs = [self.cost(item, input_type) for item in items]
        plan_costs = [self.plan_cost(item, input_type) for item in items]
        for batch in plan_batches(plan_costs, *self._budget_limits(items, costs, plan_costs)):
            chosen = [items[i] for i in batch]
            estimated = sum(costs[i] for i in batch)
            if self.paid():
                text_only = all(item.image is None for item in chosen)
                prior = text_prior(item.text for item in chosen) if text_only else None
                tokens: int | Guess = plan.guess(self.provider, self.model, estimated, prior)
            else:  # a server of your own: counted, no price, so no guess at what it would bill
                tokens = estimated
            plan.add(
                self.provider,
                self.model,
                what or ("queries" if input_type == "query" else "documents"),
                requests=1,
                items=len(batch),
                tokens=tokens,
                units=partial(self.billed_units, chosen),
                settings=self.batch_settings(chosen),
                self_hosted=not self.paid(),
            )

    def _one_batch(
        self,
        items: list[EmbedItem],
        input_type: InputType,
        tokens: int,
        positions: list[int] | None = None,
        on_rows: RowsCallback | None = None,
    ) -> np.ndarray:
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
            model=self.model if self.paid() else None,
            bill=lambda result: self.billed_units(items, result[1] if result[1] is not None else tokens),
            estimate=self.billed_units(items, tokens),
        )
        if not self.paid():
            self.usage.self_hosted(self.provider, self.model)
        if on_rows is not None and positions is not None:
            on_rows(positions, normalise(matrix))  # persisted before this request counts as done
        return matrix

    def _checked(self, rows, expected: int) -> np.ndarray:
        """Rows as a float32 matrix. An answer that does not fit the request (a cut-short or garbled body
        the SDK still parsed) is MalformedAnswer, retried like a 5xx; a wrong dimension is a ProviderError."""
        import numpy as np

        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise MalformedAnswer(f"embeddings are not numbers ({exc})") from None
        if matrix.ndim != 2 or matrix.shape[0] != expected or matrix.shape[1] == 0:
            raise MalformedAnswer(f"asked for {expected} embeddings, got shape {matrix.shape}")
        if self.dimension and matrix.shape[1] != self.dimension:
            raise ProviderError(
                f"{self.provider} {self.model}: asked for dimension {self.dimension}, got {matrix.shape[1]}",
                "check the model and --dimension",
            )
        if not np.isfinite(matrix).all():
            raise MalformedAnswer("embeddings contain NaN or infinity")
        return matrix

    def embed(self, items: list[EmbedItem], input_type: InputType, on_rows: RowsCallback | None = None) -> np.ndarray:
        """Embed any number of items; unit float32 rows in item order, or an error (no partial result).

        `on_rows(positions, rows)`, when given, receives each request's unit rows as soon as it completes
        (from a worker thread), whatever happens to the rest of the call."""
        import numpy as np

        if input_type not in ("query", "document"):
            raise UsageError(f"input type '{input_type}' is not query or document", "use query or document")
        self.check_items(items)
        if not items:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        costs = [self.cost(item, input_type) for item in items]
        plan_costs = [self.plan_cost(item, input_type) for item in items]
        plan = plan_batches(plan_costs, *self._budget_limits(items, costs, plan_costs))
        parts: list[np.ndarray | None] = [None] * len(plan)
        with (
            progress_bar(f"{self.name} {input_type}s", total=len(items)) as bar,
            ThreadPoolExecutor(max_workers=min(self.workers, len(plan))) as pool,
        ):
            futures = {
                pool.submit(
                    self._one_batch,
                    [items[i] for i in batch],
                    input_type,
                    sum(costs[i] for i in batch),
                    batch,
                    on_rows,
                ): index
                for index, batch in enumerate(plan)
            }
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    error = future.exception()
                    if error is not None:
                        for other in pending:
                            other.cancel()
                        raise error
                    parts[futures[future]] = future.result()
                    bar.advance(len(plan[futures[future]]))
        matrices = [part for part in parts if part is not None]  # every batch answered, or we raised above
        widths = {matrix.shape[1] for matrix in matrices}
        if len(widths) != 1:
            raise ProviderError(
                f"{self.provider} {self.model}: batches came back with dimensions {sorted(widths)}",
                "the provider changed the model mid-run; rerun",
            )
        return normalise(np.vstack(matrices))

    def describe(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "dimension": self.dimension}

"""An embedder from outside the package (a plugin, or an object given to `evals_repro.run`), as the run calls it.

The user's `embed` sees calls of at most `batch_size` items (its attribute; 64 when it has none), under
the per-minute budgets it declares with the attributes `requests_per_minute`, `items_per_minute` and
`tokens_per_minute` (tokens estimated from the text as for the providers; 0 or absent: no budget),
through the same throttle the hosted providers use. Each call's rows are checked (base/contracts.py: one
finite, non-zero row per item, one width throughout; a failed check is one line naming it and the items),
unit-normalised, and handed to the embedding cache the moment the call returns, so a run killed later keeps
what was computed. Calls and items are counted in the run's
usage as `<name>_requests` and `<name>_items`, waits as `<name>_wait_seconds`.

What it costs is outside evals-repro's price table, so it is never taken as free: each call bills its
estimated input tokens as provider `plugin` and the object's `model` (the throttle's estimate), which plans,
result records and reports show as "price unknown: plugin <model> (input_tokens)" until a `--prices` file prices it
(usd 0 for a local model).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..base import contracts
from ..base.errors import UsageError
from ..base.identity import ComponentIdentity
from ..base.rendering import PageStyle
from ..base.usage import Usage
from ..providers.batching import estimate_tokens
from ..providers.plan import Plan
from ..providers.throttle import Throttle
from .base import Embedder, EmbedItem, InputType, normalise

if TYPE_CHECKING:
    import numpy as np

DEFAULT_BATCH_SIZE = 64
BUDGETS = ("requests_per_minute", "items_per_minute", "tokens_per_minute")

PROVIDER = "plugin"  # what a plugin's or Python object's spend is billed and priced under

RowsCallback = Callable[[list[int], "np.ndarray"], None]


def _whole(inner: Any, attribute: str, default: int, minimum: int, name: str) -> int:
    value = getattr(inner, attribute, None)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UsageError(
            f"embedder '{name}': {attribute} = {value!r} is not a whole number >= {minimum}",
            f"set {attribute} on {type(inner).__name__} to an int (or drop it)",
        )
    return value


class GuardedEmbedder:
    """The Embedder protocol around a user's embedder: batches, budgets, checked unit rows, usage."""

    def __init__(
        self,
        inner: Embedder,
        name: str,
        usage: Usage,
        window: float = 60.0,
        identity: ComponentIdentity | None = None,
        label: str = "",
    ):
        self.inner = inner
        self.component_identity = identity  # what the embedding cache keys on (cache_keys.settings_digest)
        self.name = name
        self.label = label or f"embedder '{name}'"  # how a broken contract names it
        self.provider = PROVIDER
        self.model = inner.model
        self.dimension = inner.dimension
        self.supports_images = inner.supports_images
        self.text_style = PageStyle(inner.text_style)
        self.usage = usage
        self.batch_size = _whole(inner, "batch_size", DEFAULT_BATCH_SIZE, 1, name)
        rpm, ipm, tpm = (_whole(inner, budget, 0, 0, name) for budget in BUDGETS)
        self.throttle = Throttle(tpm, rpm, ipm, window=window) if rpm or ipm or tpm else None
        self._width: int | None = None

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def _call(self, items: list[EmbedItem], input_type: InputType) -> np.ndarray:
        ticket = None
        tokens = sum(estimate_tokens(item.text) for item in items)
        if self.throttle is not None:
            ticket, waited = self.throttle.acquire(tokens, len(items))
            if waited:
                self.usage.add(f"{self.name}_wait_seconds", waited)
        try:
            with contracts.user_call(self.label, "embed()"):
                result = self.inner.embed(items, input_type)
        finally:
            if ticket is not None and self.throttle is not None:
                self.throttle.release(ticket)
        self.usage.add(f"{self.name}_requests")
        self.usage.add(f"{self.name}_items", len(items))
        self.usage.bill(PROVIDER, self.model, {"input_tokens": tokens})
        matrix = contracts.checked_rows(result, items, input_type, self.label, self._width)
        self._width = matrix.shape[1]
        return normalise(matrix)

    def plan(self, items: list[EmbedItem], input_type: InputType, plan: Plan, what: str = "") -> None:
        """Count the calls `embed(items)` would make (the embedding cache asks only for what it lacks)."""
        if not items:
            return
        tokens = sum(estimate_tokens(item.text) for item in items)
        plan.add(
            PROVIDER,
            self.model,
            what or ("queries" if input_type == "query" else "documents"),
            requests=math.ceil(len(items) / self.batch_size),
            items=len(items),
            tokens=tokens,
            units={"input_tokens": tokens},
        )

    def embed(self, items: list[EmbedItem], input_type: InputType, on_rows: RowsCallback | None = None) -> np.ndarray:
        """Unit rows for `items`, in order, from calls of at most `batch_size` items; each call's rows go to
        `on_rows` as soon as they are checked."""
        import numpy as np

        parts = []
        for start in range(0, len(items), self.batch_size):
            rows = self._call(items[start : start + self.batch_size], input_type)
            if on_rows is not None:
                on_rows(list(range(start, start + len(rows))), rows)
            parts.append(rows)
        if not parts:
            return np.zeros((0, self._width or (self.dimension or 0)), dtype=np.float32)
        return np.vstack(parts)

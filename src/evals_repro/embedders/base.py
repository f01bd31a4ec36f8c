"""The Embedder protocol: items in, L2-normalised float32 rows out, one row per item in order.

Caching, batching limits and throttles sit around `embed` (see `retrieval/dense.py` and
`providers/`); an embedder only turns one batch of items into vectors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from ..base.rendering import ModelInput, PageStyle

if TYPE_CHECKING:
    import numpy as np

InputType = Literal["query", "document"]


# What one vector is computed from (text, image, title): the renderer's model input (rendering.py).
EmbedItem = ModelInput


@runtime_checkable
class Embedder(Protocol):
    name: str  # the method name, e.g. "voyage-4-large"
    model: str  # the provider's model id
    dimension: int | None  # requested output dimension (None = model default)
    supports_images: bool
    # How pages are rendered for it as text (rendering.PageStyle); image content always uses `image`.
    text_style: PageStyle

    def embed(self, items: list[EmbedItem], input_type: InputType) -> np.ndarray:
        """Return an (len(items), d) float32 matrix with unit-norm rows, in item order."""
        ...

    def describe(self) -> dict[str, Any]:
        """Everything that changes the vectors (model, dimension, prompts), for cache keys and results."""
        ...


def normalise(matrix: np.ndarray) -> np.ndarray:
    """Unit-normalise rows as float32; a zero row stays zero rather than becoming NaN."""
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)

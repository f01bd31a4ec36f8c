"""BM25 text analysis: bm25s's word pattern, lower-casing, and the Snowball stemmer of the corpus language.

Words are split with the pattern bm25s and scikit-learn use (`\\b\\w\\w+\\b`, so one-character
words are dropped), lower-cased, and stemmed by PyStemmer. No stopwords are removed.
Languages Snowball has no stemmer for (Bengali, Japanese, Korean, Swahili, Telugu, Thai, Yoruba,
Chinese) keep whole lower-cased words. The pattern splits on non-word characters only, so scripts
written without spaces (Chinese, Japanese, Thai) yield one token per unbroken run, not per word.

Speed: a corpus repeats each word type many times, so word types are numbered with a C-level
dictionary trick and each type is stemmed once; token ids are then mapped type -> stem with one
NumPy gather instead of a Python call per token. `CorpusTokenizer` does this a chunk at a time
(MS MARCO is streamed), numbering stems exactly as a single pass over the whole corpus would.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base.errors import DataError

if TYPE_CHECKING:
    import numpy as np

# Bump when the analysis changes in a way that changes token ids or stems (it keys the index cache).
TOKENIZER_VERSION = "1"
WORD_PATTERN = r"(?u)\b\w\w+\b"

# Corpus language (full name or ISO 639-1 code) -> PyStemmer algorithm, or None where Snowball has
# no stemmer for the language (tokens are then only lower-cased). Covers ViDoRe (full names) and
# MIRACL-VISION (ISO codes).
STEMMERS: dict[str, str | None] = {
    "english": "english",
    "en": "english",
    "french": "french",
    "fr": "french",
    "german": "german",
    "de": "german",
    "spanish": "spanish",
    "es": "spanish",
    "italian": "italian",
    "it": "italian",
    "portuguese": "portuguese",
    "pt": "portuguese",
    "arabic": "arabic",
    "ar": "arabic",
    "persian": "persian",
    "fa": "persian",
    "finnish": "finnish",
    "fi": "finnish",
    "hindi": "hindi",
    "hi": "hindi",
    "indonesian": "indonesian",
    "id": "indonesian",
    "russian": "russian",
    "ru": "russian",
    "dutch": "dutch",
    "nl": "dutch",
    # Snowball has no stemmer for these: lower-cased words only.
    "bengali": None,
    "bn": None,
    "japanese": None,
    "ja": None,
    "korean": None,
    "ko": None,
    "swahili": None,
    "sw": None,
    "telugu": None,
    "te": None,
    "thai": None,
    "th": None,
    "yoruba": None,
    "yo": None,
    "chinese": None,
    "zh": None,
}


def stemmer_name(language: str, where: str = "") -> str | None:
    """The PyStemmer algorithm for a corpus language, None when Snowball has none; DataError if unknown."""
    key = language.strip().lower()
    if key not in STEMMERS:
        place = f"{where}: " if where else ""
        raise DataError(
            f"{place}no BM25 stemmer is known for corpus language '{language}'",
            f"use one of {', '.join(sorted(STEMMERS))} as the subset's native language",
        )
    return STEMMERS[key]


def _stem_function(algorithm: str | None) -> Callable[[list[str]], list[str]]:
    if algorithm is None:
        return lambda words: list(words)
    import Stemmer

    return Stemmer.Stemmer(algorithm).stemWords


def _numbering() -> defaultdict:
    """A dict that gives each new key the next integer id when first looked up (no Python-level loop)."""
    ids: defaultdict = defaultdict()
    ids.default_factory = ids.__len__
    return ids


@dataclass
class TokenizedCorpus:
    """Documents as one flat array of stem ids plus per-document lengths, and the stem vocabulary."""

    term_ids: np.ndarray  # int32, all documents concatenated
    lengths: np.ndarray  # int64, tokens per document
    vocab: dict[str, int]  # stem -> id, ids 0..len-1


class Analyzer:
    """Split, lower-case and stem text the same way for the corpus and its queries."""

    def __init__(self, stemmer: str | None):
        self.stemmer = stemmer
        self._split = re.compile(WORD_PATTERN).findall
        self._stem = _stem_function(stemmer)

    def words(self, text: str) -> list[str]:
        return self._split(text.lower())

    def tokenize_corpus(
        self, texts: Sequence[str], on_chunk: Callable[[int], None] | None = None, chunk_size: int = 4096
    ) -> TokenizedCorpus:
        """The whole corpus at once (small corpora, tests); `CorpusTokenizer` streams the same analysis."""
        import numpy as np

        tokenizer = CorpusTokenizer(self)
        term_chunks: list[np.ndarray] = []
        length_chunks: list[np.ndarray] = []
        for start in range(0, len(texts), chunk_size):
            term_ids, lengths = tokenizer.add(texts[start : start + chunk_size])
            term_chunks.append(term_ids)
            length_chunks.append(lengths)
            if on_chunk is not None:
                on_chunk(len(lengths))
        return TokenizedCorpus(
            np.concatenate(term_chunks) if term_chunks else np.empty(0, dtype=np.int32),
            np.concatenate(length_chunks) if length_chunks else np.empty(0, dtype=np.int64),
            tokenizer.vocab,
        )

    def query_terms(self, texts: Iterable[str], vocab: dict[str, int]) -> list[list[int]]:
        """Each query's stem ids in the corpus vocabulary, in query order; unknown stems are dropped."""
        split = [self.words(text) for text in texts]
        types = list({word: None for words in split for word in words})
        stem_of = dict(zip(types, self._stem(types)))
        result = []
        for words in split:
            ids = (vocab.get(stem_of[word]) for word in words)
            result.append([term for term in ids if term is not None])
        return result


class CorpusTokenizer:
    """Tokenise a corpus chunk by chunk, numbering stems across chunks.

    Stem ids follow the order in which word types first occur in the corpus (each new type is
    stemmed once, when its chunk arrives), so a corpus gets the same vocabulary and term ids
    whether it is tokenised whole or streamed in chunks of any size.
    """

    def __init__(self, analyzer: Analyzer):
        self.analyzer = analyzer
        self._stem_ids = _numbering()
        self._word_stem: dict[str, int] = {}

    @property
    def vocab(self) -> dict[str, int]:
        """stem -> id, ids 0..len-1 (grows with each chunk)."""
        return dict(self._stem_ids)

    @property
    def n_terms(self) -> int:
        return len(self._stem_ids)

    def add(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(stem ids of every token, int32; tokens per text, int64) for one chunk of texts."""
        import numpy as np

        split = self.analyzer._split
        local = _numbering()  # word types of this chunk, in first-occurrence order
        lookup = local.__getitem__
        lengths = np.empty(len(texts), dtype=np.int64)
        flat: list[int] = []
        for offset, text in enumerate(texts):
            words = split(text.lower())
            lengths[offset] = len(words)
            flat.extend(map(lookup, words))
        types = list(local)
        known = self._word_stem.get
        ids = [known(word) for word in types]
        new = [word for word, sid in zip(types, ids) if sid is None]
        if new:
            new_ids = list(map(self._stem_ids.__getitem__, self.analyzer._stem(new)))
            self._word_stem.update(zip(new, new_ids))
            fresh = iter(new_ids)
            ids = [sid if sid is not None else next(fresh) for sid in ids]
        type_to_stem = np.asarray(ids, dtype=np.int32)
        return type_to_stem[np.asarray(flat, dtype=np.int32)], lengths

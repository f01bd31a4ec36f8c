"""BM25 (`bm25`): bm25s with Lucene scoring, k1 = 1.5, b = 0.75, the corpus language's Snowball stemmer.

Pages are indexed in the renderer's `plain` style (title, blank line, text). Queries are analysed with the corpus
language's stemmer whatever their own language, since only corpus stems can match. No stopwords.

Rankings follow the trec_eval order (score descending, then page id descending). bm25s breaks ties
arbitrarily, so each query fetches past k, and fetches further while the k-th score equals the
last score fetched, before the deterministic sort and cut. Pages that match no query term (score 0)
are never returned; a query with no known term gets an empty ranking.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..context import MethodContext
from ..data import Query, Run, Subset
from ..errors import UsageError
from ..metrics.ranking import trec_ranked as ranked
from ..progress import progress_bar
from ..registry import METHODS
from ..rendering import PageStyle, page_text
from ..rendering import describe as describe_style
from .bm25_index import INDEX_FORMAT, build_scores, load_index, save_index
from .tokenize import TOKENIZER_VERSION, Analyzer, stemmer_name

K1 = 1.5
B = 0.75
METHOD = "lucene"
QUERY_BATCH = 256


PAGE_STYLE = PageStyle.PLAIN  # the title (MIRACL-VISION's "prefixed text"), then the text


def numba_available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return os.environ.get("NUMBA_DISABLE_JIT") in (None, "", "0")


def _cache_numba_kernel() -> None:
    """Keep bm25s's retrieval kernel in numba's on-disk cache.

    bm25s compiles it afresh in every process (10-60 s on a busy 2-core machine); cached, later
    runs load it in a few seconds. Only the dispatcher bm25s will use (parallel when there are
    several CPUs) is cached: its serial twin shares the cache file name. Best effort: without a
    writable cache location numba simply compiles as before.
    """
    try:
        from bm25s.numba import retrieve_utils

        parallel = (os.cpu_count() or 1) > 1  # what n_threads=-1 selects
        kernel = "parallel" if parallel else "serial"
        getattr(retrieve_utils, f"_retrieve_internal_jitted_{kernel}").enable_caching()
    except Exception:  # noqa: BLE001 - an optimisation only; retrieval works without it
        pass


def tie_safe_fetch(top_k: int, n_docs: int) -> int:
    """How many results to ask bm25s for first: k plus a margin, so exact ties at rank k can be sorted."""
    return min(n_docs, top_k + max(16, top_k // 2))


class _LoadedIndex:
    def __init__(self, retriever, page_ids: list[str], analyzer: Analyzer, cache_hit: bool, key: str):
        self.retriever = retriever
        self.page_ids = page_ids
        self.analyzer = analyzer
        self.cache_hit = cache_hit
        self.key = key


class BM25Retriever:
    """One BM25 index per corpus (cached on disk), searched with bm25s's numba backend when available."""

    def __init__(self, name: str, cache_dir: Path, k1: float = K1, b: float = B, backend: str | None = None):
        self.name = name
        self.cache_dir = Path(cache_dir)
        self.k1 = k1
        self.b = b
        self.backend = backend or ("numba" if numba_available() else "numpy")
        if self.backend == "numba":
            _cache_numba_kernel()
        self._indexes: dict[str, _LoadedIndex] = {}
        self._last: dict[str, Any] = {}

    # -- index -----------------------------------------------------------------------------
    def settings(self, subset: Subset) -> dict[str, Any]:
        """Everything the index depends on; its digest names the cache directory."""
        import bm25s

        return {
            "corpus": subset.fingerprint(),
            "n_pages": len(subset.pages),
            "k1": self.k1,
            "b": self.b,
            "method": METHOD,
            "stemmer": stemmer_name(subset.native_language, f"subset {subset.benchmark}/{subset.name}"),
            "tokenizer": TOKENIZER_VERSION,
            "index_format": INDEX_FORMAT,
            "bm25s": bm25s.__version__,
        }

    def index(self, subset: Subset) -> _LoadedIndex:
        """Load the subset's index from the cache, or build and cache it."""
        settings = self.settings(subset)
        key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:32]
        if key in self._indexes:
            return self._indexes[key]
        analyzer = Analyzer(settings["stemmer"])
        directory = self.cache_dir / "bm25" / key
        loaded = load_index(directory, settings, self.backend)
        if loaded is not None:
            retriever, page_ids = loaded
            index = _LoadedIndex(retriever, page_ids, analyzer, cache_hit=True, key=key)
        else:
            retriever, page_ids = self._build(subset, analyzer)
            save_index(directory, retriever, page_ids, settings)
            index = _LoadedIndex(retriever, page_ids, analyzer, cache_hit=False, key=key)
        self._indexes = {key: index}  # keep one corpus in memory at a time
        return index

    def _build(self, subset: Subset, analyzer: Analyzer):
        import bm25s

        pages = subset.pages
        with progress_bar(f"BM25 tokenising {subset.name}", len(pages)) as bar:
            tokens = analyzer.tokenize_corpus([page_text(p, PAGE_STYLE) for p in pages], on_chunk=bar.advance)
        with progress_bar(f"BM25 indexing {subset.name}", 1) as bar:
            retriever = bm25s.BM25(k1=self.k1, b=self.b, method=METHOD, backend=self.backend)
            retriever.scores = build_scores(tokens, self.k1, self.b)
            retriever.vocab_dict = tokens.vocab
            retriever.unique_token_ids_set = set(tokens.vocab.values())
            retriever.nonoccurrence_array = None
            bar.advance()
        return retriever, [p.id for p in pages]

    # -- retrieval -------------------------------------------------------------------------
    def run(self, subset: Subset, queries: list[Query], top_k: int) -> Run:
        if top_k < 1:
            raise UsageError(f"top_k must be at least 1, got {top_k}", "pass --top-k 100")
        index = self.index(subset)
        self._last = {
            "subset": subset.name,
            "stemmer": index.analyzer.stemmer or "none",
            "cache_hit": index.cache_hit,
            "index_key": index.key,
        }
        terms = index.analyzer.query_terms([q.text for q in queries], index.retriever.vocab_dict)
        run: Run = {q.id: {} for q in queries}
        active = [i for i, ids in enumerate(terms) if ids]
        with progress_bar(f"BM25 retrieval {subset.name}", len(active)) as bar:
            for start in range(0, len(active), QUERY_BATCH):
                batch = active[start : start + QUERY_BATCH]
                for i, ranking in zip(batch, self._search(index, [terms[i] for i in batch], top_k)):
                    run[queries[i].id] = ranking
                bar.advance(len(batch))
        return run

    def _search(self, index: _LoadedIndex, terms: list[list[int]], top_k: int) -> list[dict[str, float]]:
        """Top-k per query in trec_eval order, fetching deeper wherever rank k ties with the last fetched."""
        n_docs = len(index.page_ids)
        fetch = tie_safe_fetch(top_k, n_docs)
        results: list[dict[str, float] | None] = [None] * len(terms)
        pending = list(range(len(terms)))
        while pending:
            docs, scores = self._retrieve(index, [terms[i] for i in pending], fetch)
            deeper = []
            for row, i in enumerate(pending):
                row_scores = scores[row]
                last = row_scores[-1]
                if fetch < n_docs and last > 0 and last == row_scores[min(top_k, fetch) - 1]:
                    deeper.append(i)
                    continue
                keep = row_scores > 0
                candidates = dict(zip((index.page_ids[d] for d in docs[row][keep].tolist()), row_scores[keep].tolist()))
                results[i] = dict(ranked(candidates, top_k))
            pending = deeper
            fetch = min(n_docs, fetch * 2)
        return results  # type: ignore[return-value]

    def _retrieve(self, index: _LoadedIndex, terms: list[list[int]], k: int) -> tuple[np.ndarray, np.ndarray]:
        selection = "numba" if self.backend == "numba" else "numpy"
        docs, scores = index.retriever.retrieve(
            terms,
            k=k,
            show_progress=False,
            n_threads=-1,
            backend_selection=selection,
            chunksize=None if selection == "numba" else 50,
        )
        return docs, scores

    def describe(self) -> dict[str, Any]:
        import bm25s

        return {
            "library": "bm25s",
            "bm25s_version": bm25s.__version__,
            "method": METHOD,
            "k1": self.k1,
            "b": self.b,
            "stopwords": None,
            "tokenizer": f"regex {TOKENIZER_VERSION}, lower-cased, Snowball stemmer of the corpus language",
            "backend": self.backend,
            "rendering": describe_style(PAGE_STYLE),
            **self._last,
        }


@METHODS.register("bm25", description="BM25 (bm25s, Lucene, k1=1.5, b=0.75, Snowball stemmer)")
def build(name: str, ctx: MethodContext) -> BM25Retriever:
    if ctx.content == "images":
        raise UsageError(
            f"method '{name}' indexes page text and cannot take --content images",
            "use --content markdown, or an image-capable method",
        )
    return BM25Retriever(name, ctx.cache_dir)

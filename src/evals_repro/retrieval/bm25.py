"""BM25 (`bm25`): bm25s with Lucene scoring, k1 = 1.5, b = 0.75, the corpus language's Snowball stemmer.

Pages are indexed in the renderer's `plain` style (title, blank line, text). Queries are analysed with the corpus
language's stemmer whatever their own language, since only corpus stems can match. No stopwords.

The corpus is streamed into the index a chunk at a time (a `PageStore` corpus is never loaded whole),
the index is cached under its settings' digest (corpus fingerprint included) and served memory-mapped,
also right after it was built, so an 8.8M-passage index costs its page cache, not its size in RAM.
NumPy, bm25s and the index code are imported when an index is built or searched, so looking the method
up (every command does, to check it) imports none of them.

Rankings follow the trec_eval order (score descending, then page id descending). bm25s breaks ties
arbitrarily, so each query fetches past k, and fetches further while the k-th score equals the
last score fetched, before the deterministic sort and cut. Pages that match no query term (score 0)
are never returned; a query with no known term gets an empty ranking.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.context import MethodContext
from ..base.data import Query, Run, Subset
from ..base.errors import UsageError
from ..base.io import staging_directory
from ..base.progress import progress_bar
from ..base.registry import METHODS
from ..base.rendering import PageStyle, page_text
from ..base.rendering import describe as describe_style
from ..metrics.ranking import trec_ranked as ranked
from .tokenize import STEMMERS, TOKENIZER_VERSION, Analyzer, CorpusTokenizer, stemmer_name

if TYPE_CHECKING:
    import numpy as np

    from .bm25_index import PageIds

K1 = 1.5
B = 0.75
METHOD = "lucene"
QUERY_BATCH = 256


PAGE_STYLE = PageStyle.PLAIN  # the title (MIRACL-VISION's "prefixed text"), then the text


def numba_available() -> bool:
    """Whether numba is installed and on: looked up, not imported (its 0.3 s import waits for the first search)."""
    from importlib.util import find_spec

    if find_spec("numba") is None:
        return False
    return os.environ.get("NUMBA_DISABLE_JIT") in (None, "", "0")


def tie_safe_fetch(top_k: int, n_docs: int) -> int:
    """How many results to ask bm25s for first: k plus a margin, so exact ties at rank k can be sorted."""
    return min(n_docs, top_k + max(16, top_k // 2))


def page_text_chunks(subset: Subset, chunk: int = 65536) -> Iterator[list[str]]:
    """The corpus as BM25 indexes it, a chunk of texts at a time: a page store streams from disk
    (its pages have no title, so their plain rendering is their text)."""
    from ..base.pagestore import PageStore

    if isinstance(subset.pages, PageStore):
        yield from subset.pages.iter_texts(chunk)
        return
    pages = subset.pages
    for start in range(0, len(pages), chunk):
        yield [page_text(p, PAGE_STYLE) for p in pages[start : start + chunk]]


def subset_page_ids(subset: Subset) -> PageIds:
    import numpy as np

    from ..base.pagestore import PageStore
    from .bm25_index import PageIds

    if isinstance(subset.pages, PageStore):
        return PageIds(np.asarray(subset.pages.id_array()))
    return PageIds.from_strings([p.id for p in subset.pages])


class _LoadedIndex:
    def __init__(self, retriever, page_ids: PageIds, analyzer: Analyzer, cache_hit: bool, key: str):
        self.retriever = retriever
        self.page_ids = page_ids
        self.analyzer = analyzer
        self.cache_hit = cache_hit
        self.key = key


class BM25Retriever:
    """One BM25 index per corpus (cached on disk), searched with our numba kernel when numba is on."""

    def __init__(self, name: str, cache_dir: Path, k1: float = K1, b: float = B, backend: str | None = None):
        self.name = name
        self.cache_dir = Path(cache_dir)
        self.k1 = k1
        self.b = b
        self.backend = backend or ("numba" if numba_available() else "numpy")
        self._indexes: dict[str, _LoadedIndex] = {}
        self._last: dict[str, Any] = {}

    # -- index -----------------------------------------------------------------------------
    def settings(self, subset: Subset) -> dict[str, Any]:
        """Everything the index depends on; its digest names the cache directory."""
        import bm25s

        from .bm25_index import INDEX_FORMAT

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
        from .bm25_index import load_index, save_index

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
            self._indexes = {}  # free the previous corpus's index before building the next
            staging = staging_directory(directory)
            retriever = self._build(subset, analyzer, staging)
            save_index(directory, retriever, subset_page_ids(subset), settings, staging=staging)
            del retriever  # serve from the saved, memory-mapped copy, like every later run
            loaded = load_index(directory, settings, self.backend)
            if loaded is None:
                raise OSError(f"BM25 index {directory} could not be read back after writing")
            retriever, page_ids = loaded
            index = _LoadedIndex(retriever, page_ids, analyzer, cache_hit=False, key=key)
        self._indexes = {key: index}  # keep one corpus in memory at a time
        return index

    def _build(self, subset: Subset, analyzer: Analyzer, spill_dir: Path):
        """Stream the corpus through the tokenizer into the two-pass scores builder."""
        import bm25s

        from .bm25_index import ScoresBuilder

        tokenizer = CorpusTokenizer(analyzer)
        builder = ScoresBuilder(self.k1, self.b, spill_dir=spill_dir)
        with progress_bar(f"BM25 tokenising {subset.name}", len(subset.pages)) as bar:
            for texts in page_text_chunks(subset):
                builder.add(*tokenizer.add(texts))
                bar.advance(len(texts))
        with progress_bar(f"BM25 indexing {subset.name}", 1) as bar:
            vocab = tokenizer.vocab
            retriever = bm25s.BM25(k1=self.k1, b=self.b, method=METHOD, backend=self.backend)
            retriever.scores = builder.finish(len(vocab))
            retriever.vocab_dict = vocab
            retriever.unique_token_ids_set = set(vocab.values())
            retriever.nonoccurrence_array = None
            bar.advance()
        return retriever

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
        """Top k per query, scores descending: our numba kernel (only the documents a query reaches,
        see bm25_kernels), or bm25s's own NumPy retrieval where numba is off. Same scores either way."""
        if self.backend == "numba":
            from .bm25_kernels import top_k

            return top_k(index.retriever.scores, terms, k)
        docs, scores = index.retriever.retrieve(
            terms, k=k, show_progress=False, n_threads=-1, backend_selection="numpy", chunksize=50
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


@METHODS.register(
    "bm25",
    description="BM25 (bm25s, Lucene, k1=1.5, b=0.75, Snowball stemmer)",
    languages=tuple(STEMMERS),  # corpus languages it can analyse, checked before any data is loaded
)
def build(name: str, ctx: MethodContext) -> BM25Retriever:
    if ctx.content == "images":
        raise UsageError(
            f"method '{name}' indexes page text and cannot take --content images",
            "use --content markdown, or an image-capable method",
        )
    return BM25Retriever(name, ctx.cache_dir)

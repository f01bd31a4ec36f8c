"""Exact inner-product top-k over float32 embeddings, in bounded memory, ties broken like trec_eval.

Rows are expected unit-norm (the embedders return them so), which makes the inner product the
cosine. The corpus matrix is used in place (never copied). Scores are computed one
(query block x corpus block) tile at a time with a BLAS matmul into a reused buffer; each
query keeps a running threshold (its k-th best score so far, less a margin that covers float32
rounding), so after the first tile only the few scores near or above it are kept as
candidates, compacted whenever they pile up. The survivors are rescored exactly (float64, one
fixed summation order per pair) and ordered score descending, then document id descending as a
string (the trec_eval order). The rescoring matters: BLAS sums a dot product in an order that
depends on where the row sits in the tile, so duplicate pages would otherwise differ in the
last bit and their order would depend on the batch. Scratch memory stays within
`memory_budget` bytes (default: 1/12 of the corpus bytes, at least 8 MiB).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import UsageError

# The score tile takes 4 of every 16 budget bytes per tile element; its mask 1; the rest holds the
# pending candidates, their compaction and the exact rescoring.
_BYTES_PER_TILE_ELEMENT = 16
# BLAS runs far slower on narrow tiles (1.5 s vs 2.8 s at 1000 x 4096 vs 1000 x 1700, d=1024).
_MIN_CORPUS_BLOCK = 4096
_MIN_BUDGET = 8 << 20
_MAX_QUERY_BLOCK = 1024


class ExactIndex:
    """Exact top-k search over `embeddings` (n, d) float32 whose rows belong to `ids`."""

    def __init__(self, embeddings: np.ndarray, ids: Sequence[str], memory_budget: int | None = None):
        if embeddings.ndim != 2:
            raise UsageError(f"ExactIndex needs a 2-d matrix, got shape {embeddings.shape}",
                             "pass one embedding row per document")
        if len(ids) != embeddings.shape[0]:
            raise UsageError(f"ExactIndex got {embeddings.shape[0]} rows but {len(ids)} ids",
                             "pass one id per embedding row")
        # No copy when the caller already holds C-contiguous float32 (the normal case).
        self.embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
        self.ids = list(ids)
        # id_rank[i] = position of ids[i] in ascending string order: the tie-breaker.
        order = sorted(range(len(self.ids)), key=self.ids.__getitem__)
        self.id_rank = np.empty(len(self.ids), dtype=np.int64)
        self.id_rank[order] = np.arange(len(self.ids), dtype=np.int64)
        corpus_bytes = self.embeddings.nbytes
        self.max_norm = self._max_norm()
        self.memory_budget = memory_budget if memory_budget is not None else max(_MIN_BUDGET, corpus_bytes // 12)

    def _max_norm(self) -> float:
        """Largest row norm (1.0 for unit rows), for the float32 error bound; computed in blocks."""
        largest = 0.0
        for start in range(0, len(self.embeddings), 65536):
            part = self.embeddings[start : start + 65536]
            largest = max(largest, float(np.einsum("ij,ij->i", part, part).max()))
        return float(np.sqrt(largest)) * 1.0001

    @property
    def dimension(self) -> int:
        return self.embeddings.shape[1]

    def __len__(self) -> int:
        return self.embeddings.shape[0]

    def _blocks(self, n_queries: int) -> tuple[int, int]:
        elements = max(1, self.memory_budget // _BYTES_PER_TILE_ELEMENT)
        query_block = max(1, min(n_queries, _MAX_QUERY_BLOCK, elements // _MIN_CORPUS_BLOCK))
        corpus_block = max(1, min(len(self), elements // query_block))
        return query_block, corpus_block

    def search(self, queries: np.ndarray, top_k: int) -> tuple[np.ndarray, np.ndarray]:
        """Return (row indices, float64 exact scores), each (n_queries, min(top_k, n)), best first."""
        if top_k < 1:
            raise UsageError(f"top_k must be at least 1, got {top_k}", "pass --top-k 100")
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.dimension:
            raise UsageError(f"query matrix has shape {queries.shape}, the index has dimension {self.dimension}",
                             "embed queries with the same model and dimension as the corpus")
        m, k = queries.shape[0], min(top_k, len(self))
        indices = np.empty((m, k), dtype=np.int64)
        scores = np.empty((m, k), dtype=np.float64)
        if m == 0 or k == 0:
            return indices, scores
        query_block, corpus_block = self._blocks(m)
        tile = np.empty(query_block * corpus_block, dtype=np.float32)
        mask = np.empty(query_block * corpus_block, dtype=np.bool_)
        for q0 in range(0, m, query_block):
            q1 = min(m, q0 + query_block)
            block_scores, block_indices = self._search_block(queries[q0:q1], k, corpus_block, tile, mask)
            indices[q0:q1] = block_indices
            scores[q0:q1] = block_scores
        return indices, scores

    def _search_block(self, block: np.ndarray, k: int, corpus_block: int, tile: np.ndarray,
                      mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        qb = block.shape[0]
        # Bound on |float32 BLAS score - exact score| per query (gamma_d * |q| * max|c|, doubled);
        # a document can only reach the exact top k if its BLAS score is within 2x that of the
        # running k-th BLAS score, so candidates keep that margin until the exact rescoring.
        error = 2.0 * self.dimension * 2.0**-24 * np.linalg.norm(block, axis=1) * self.max_norm
        margin = (2.0 * error).astype(np.float32)
        threshold = np.full(qb, -np.inf, dtype=np.float32)
        pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        pending_count = 0
        compact_at = max(2 * k * qb, self.memory_budget // 160)  # ~20 bytes each, ~80 while ordered
        for c0 in range(0, len(self), corpus_block):
            c1 = min(len(self), c0 + corpus_block)
            width = c1 - c0
            scores = tile[: qb * width].reshape(qb, width)
            np.matmul(block, self.embeddings[c0:c1].T, out=scores)
            if c0 == 0 and width > k:
                # Seed every query's threshold with its k-th best score among the first columns
                # (a narrow slice: the partition copies it).
                seed = scores[:, : min(width, max(2 * k, 2048))]
                threshold = np.partition(seed, seed.shape[1] - k, axis=1)[:, seed.shape[1] - k] - margin
            keep = mask[: qb * width].reshape(qb, width)
            np.greater_equal(scores, threshold[:, None], out=keep)
            flat = np.flatnonzero(keep)  # several times faster than a 2-d nonzero
            r, c = np.divmod(flat, width)
            pending.append((r, c + c0, scores.ravel()[flat]))
            pending_count += r.size
            if pending_count >= compact_at:
                pending, kth = self._select(pending, qb, k, margin)
                pending, kth = self._prune_crowded(block, pending, qb, k, kth)
                threshold = kth - margin
                pending_count = pending[0][0].size
        [(rows, cols, _)], _ = self._select(pending, qb, k, margin)
        exact = self._rescore(block, rows, cols)
        [(_, cols, exact)], _ = self._select([(rows, cols, exact)], qb, k, None)
        return exact.reshape(qb, k), cols.reshape(qb, k)

    def _select(self, parts, qb: int, k: int, margin: np.ndarray | None):
        """Per query, the best k candidates (score desc, id desc) plus, with a margin, every
        candidate within it of the k-th score. Returns ([(rows, cols, scores)] best first, k-th scores)."""
        rows = np.concatenate([p[0] for p in parts])
        cols = np.concatenate([p[1] for p in parts])
        vals = np.concatenate([p[2] for p in parts])
        order = self._order(rows, cols, vals, qb)
        rows, cols, vals = rows[order], cols[order], vals[order]
        starts = np.searchsorted(rows, np.arange(qb + 1))
        counts = np.diff(starts)
        kth = np.full(qb, -np.inf, dtype=vals.dtype)
        full = counts >= k
        kth[full] = vals[starts[:-1][full] + k - 1]
        keep = np.arange(rows.size) - starts[rows] < k
        if margin is not None:
            keep |= vals >= (kth - margin)[rows]
        return [(rows[keep], cols[keep], vals[keep])], kth

    def _order(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, qb: int) -> np.ndarray:
        """Permutation sorting by row, then score descending, then id descending.

        float32 scores fold into one uint64 key with the row and the id rank (one argsort,
        several times faster than a three-key lexsort) when the ranks fit in the spare bits."""
        rank_bits = 64 - 32 - max(1, int(qb).bit_length())
        if vals.dtype != np.float32 or len(self) >= 1 << rank_bits:
            return np.lexsort((-self.id_rank[cols], -vals, rows))
        bits = vals.view(np.int32).astype(np.int64)
        ascending = np.where(bits < 0, bits ^ 0x7FFFFFFF, bits) + (1 << 31)  # 0 .. 2**32-1, with the value
        key = (rows.astype(np.uint64) << np.uint64(32 + rank_bits))
        key |= ((0xFFFFFFFF - ascending).astype(np.uint64) << np.uint64(rank_bits))
        key |= ((1 << rank_bits) - 1 - self.id_rank[cols]).astype(np.uint64)
        return np.argsort(key)

    def _prune_crowded(self, block: np.ndarray, pending, qb: int, k: int, kth: np.ndarray):
        """Rows whose margin band holds many more than k candidates (a mass of duplicate or
        zero vectors tied at rank k) are rescored exactly now and cut to k, bounding memory."""
        rows, cols, vals = pending[0]
        counts = np.bincount(rows, minlength=qb)
        crowded = counts > 2 * k + 64
        if not crowded.any():
            return pending, kth
        in_crowded = crowded[rows]
        c_rows, c_cols = rows[in_crowded], cols[in_crowded]
        exact = self._rescore(block, c_rows, c_cols)
        [(c_rows, c_cols, exact)], _ = self._select([(c_rows, c_cols, exact)], qb, k, None)
        exact = exact.astype(np.float32)
        kth = self._kth(c_rows, exact, qb, k, kth)
        merged = (np.concatenate([rows[~in_crowded], c_rows]), np.concatenate([cols[~in_crowded], c_cols]),
                  np.concatenate([vals[~in_crowded], exact]))
        return [merged], kth

    @staticmethod
    def _kth(rows: np.ndarray, vals: np.ndarray, qb: int, k: int, previous: np.ndarray) -> np.ndarray:
        """k-th best value per row of (rows, vals); rows with fewer than k keep `previous`."""
        kth = previous.copy()
        order = np.lexsort((-vals, rows))
        rows, vals = rows[order], vals[order]
        starts = np.searchsorted(rows, np.arange(qb + 1))
        full = np.diff(starts) >= k
        kth[full] = vals[starts[:-1][full] + k - 1]
        return kth

    def _rescore(self, block: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Float64 inner products of the candidates (float32 products are exact in float64), each
        summed in one fixed order whatever its position or alignment, so that identical vectors
        score identically wherever they sit in the corpus or the batch."""
        exact = np.empty(rows.size, dtype=np.float64)
        chunk = max(1, self.memory_budget // (64 * self.dimension))
        for start in range(0, rows.size, chunk):
            sl = slice(start, start + chunk)
            exact[sl] = np.einsum("ij,ij->i", self.embeddings[cols[sl]], block[rows[sl]], dtype=np.float64)
        return exact

    def search_ids(self, queries: np.ndarray, top_k: int) -> list[list[tuple[str, float]]]:
        """Like `search`, with document ids and Python floats, best first."""
        indices, scores = self.search(queries, top_k)
        return [[(self.ids[i], float(s)) for i, s in zip(row_i, row_s)]
                for row_i, row_s in zip(indices.tolist(), scores.tolist())]

"""p-MRR as mteb's `calculate_pmrr` computes it (mteb a905523d0, mteb/_evaluators/retrieval_metrics.py), issue 23.3.

mteb skips a pair whose `-og` or `-changed` ranking is absent, scores a document by ratios of reciprocal
ranks, averages a pair's documents with pandas' groupby mean and the pairs with pandas' Series.mean. The
reference below is that pipeline run through pandas itself on the same ranks.
"""

from __future__ import annotations

import random

import pandas as pd  # dev dependency: the reference arithmetic (mteb computes p-MRR with pandas)

from evals_repro.metrics.published.p_mrr import p_mrr, pair_scores


def test_a_pair_without_its_changed_ranking_is_skipped():
    # The case: pair x has an og ranking (d at rank 4) and no changed one; pair p is complete, its
    # changed document moving from rank 1 to 2 (1 - (1/2)/(1/1) = 0.5). mteb: 0.5 (x skipped); scoring x's
    # missing ranking as empty gave (0.5 + (1/4 - 1)) / 2 = -0.125.
    run = {
        "x-og": {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0},
        "p-og": {"e": 2.0, "f": 1.0},
        "p-changed": {"f": 2.0, "e": 1.0},
    }
    changed = {"x": ["d"], "p": ["e"]}
    assert p_mrr(run, changed) == 0.5
    assert list(pair_scores(run, changed)) == ["p"]
    assert p_mrr({**run, "x-changed": {}}, changed) == 0.5  # an empty ranking is absent too (no TREC line)
    assert p_mrr({k: v for k, v in run.items() if k != "p-og"}, {"p": ["e"]}) == 0.0  # nothing left to score


def reference(ranks: dict[str, list[tuple[int, int]]]) -> float:
    """pandas on (pair, og rank, new rank) rows: the per-document score, groupby mean, Series mean."""
    rows = [{"qid": pair, "og_rank": og, "new_rank": new} for pair, docs in ranks.items() for og, new in docs]
    frame = pd.DataFrame(rows)

    def score(row):
        og, new = row["og_rank"], row["new_rank"]
        return ((1 / og) / (1 / new)) - 1 if og >= new else 1 - ((1 / new) / (1 / og))

    frame["p-MRR"] = frame.apply(score, axis=1)
    return float(frame.groupby("qid").agg({"p-MRR": "mean"})["p-MRR"].mean())


def test_last_digit_agrees_with_pandas_on_many_pairs():
    rng = random.Random(23)
    agreed = 0
    for trial in range(40):
        run, changed, ranks = {}, {}, {}
        for p in range(rng.randint(9, 140)):  # past NumPy's 8-element unrolling and its 128-element blocks
            pair = f"q{rng.randint(0, 10**6)}-{p}"
            depth = rng.randint(3, 30)
            og = rng.sample(range(depth), depth)
            new = rng.sample(range(depth), depth)
            docs = [f"d{i}" for i in rng.sample(range(depth), rng.randint(1, min(7, depth)))]
            run[f"{pair}-og"] = {f"d{i}": float(-r) for i, r in enumerate(og)}  # doc i at rank og[i] + 1
            run[f"{pair}-changed"] = {f"d{i}": float(-r) for i, r in enumerate(new)}
            changed[pair] = docs
            ranks[pair] = [(og[int(d[1:])] + 1, new[int(d[1:])] + 1) for d in docs]
        expected = reference(ranks)
        assert p_mrr(run, changed, score_precision="float64") == expected, trial
        agreed += 1
    assert agreed == 40


def test_a_pair_mean_is_pandas_own_group_mean_in_mteb_row_order():
    """Pair p's four documents: og ranks 8, 2, 1, 11; new ranks 2, 3, 3, 3 (three absent from a 2-document
    changed ranking). mteb's pandas group mean of them depends on the rows before the group (pandas 3.1.1:
    -0.11931818181818182 alone or first, -0.1193181818181818 after pair q's row), so rows follow mteb's
    order: pairs as the changed documents list them, not sorted."""
    og = {f"z{r}": float(-r) for r in range(1, 12)}
    og.update({"d0": -8.0, "d1": -2.0, "d2": -1.0, "d3": -11.0})
    for r in (1, 2, 8, 11):
        del og[f"z{r}"]
    run = {
        "p-og": og,
        "p-changed": {"z1": -1.0, "d0": -2.0},
        "q-og": {"e": -1.0, "f": -2.0},
        "q-changed": {"f": -1.0, "e": -2.0},
    }
    p_ranks = [(8, 2), (2, 3), (1, 3), (11, 3)]
    for changed, ranks in (
        ({"p": ["d0", "d1", "d2", "d3"], "q": ["e"]}, {"p": p_ranks, "q": [(1, 2)]}),
        ({"q": ["e"], "p": ["d0", "d1", "d2", "d3"]}, {"q": [(1, 2)], "p": p_ranks}),
    ):
        expected = reference(ranks)
        assert p_mrr(run, changed, score_precision="float64") == expected
    assert reference({"p": p_ranks, "q": [(1, 2)]}) != reference({"q": [(1, 2)], "p": p_ranks})  # order matters

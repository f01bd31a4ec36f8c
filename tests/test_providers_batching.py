"""Token estimates and batch plans: consecutive, complete, within limits, oversize items alone."""

from __future__ import annotations

import pytest

from evals_repro.providers.batching import estimate_tokens, plan_batches


def test_estimate_ascii_and_non_ascii():
    assert estimate_tokens("") == 1
    assert estimate_tokens("abc") == 1
    assert estimate_tokens("abcd") == 2
    assert estimate_tokens("a" * 300) == 100
    assert estimate_tokens("日本語") == 3
    assert estimate_tokens("café") == 2  # 3 ASCII -> 1, plus one for é


def test_plan_by_items():
    assert plan_batches([1] * 5, max_items=2, max_tokens=100) == [[0, 1], [2, 3], [4]]


def test_plan_by_tokens_keeps_order_and_isolates_oversize():
    counts = [4, 4, 3, 20, 1, 1, 9]
    plan = plan_batches(counts, max_items=10, max_tokens=10)
    assert plan == [[0, 1], [2], [3], [4, 5], [6]]
    assert [i for batch in plan for i in batch] == list(range(len(counts)))
    for batch in plan:
        assert len(batch) == 1 or sum(counts[i] for i in batch) <= 10


def test_plan_empty_and_invalid():
    assert plan_batches([], 3, 3) == []
    with pytest.raises(ValueError):
        plan_batches([1], 0, 3)

"""The scoring protocol: validation in one line, canonical names, and a lossless dict round trip."""

from __future__ import annotations

import pytest

from evals_repro import metrics as M
from evals_repro.base.errors import UsageError
from evals_repro.metrics.protocol import ScoringProtocol


def test_defaults_and_round_trip():
    protocol = ScoringProtocol()
    assert protocol.measures == M.DEFAULT_MEASURES
    assert (protocol.tie_rule, protocol.score_precision, protocol.relevance_level) == ("group-mean", "float32", 1)
    assert (protocol.max_results, protocol.judged_only, protocol.complete) == (None, False, True)
    custom = ScoringProtocol(
        measures=("nDCG@10", "map"),
        tie_rule="input_order",
        score_precision="float64",
        relevance_level=2,
        max_results=100,
        judged_only=True,
        complete=False,
    )
    assert custom.measures == ("ndcg_at_10", "map")
    assert custom.tie_rule == "input-order"
    data = custom.as_dict()
    assert data == {
        "measures": ["ndcg_at_10", "map"],
        "tie_rule": "input-order",
        "score_precision": "float64",
        "relevance_level": 2,
        "max_results": 100,
        "judged_only": True,
        "complete": False,
        "ignore_identical_ids": False,
    }
    assert ScoringProtocol.from_dict(data) == custom
    assert ScoringProtocol.from_dict({}) == protocol  # fields an older file lacks take their defaults
    assert custom.reference == "trec_eval 10.x" and protocol.reference.startswith("trec_eval 9")


@pytest.mark.parametrize(
    "changes, needle",
    [
        ({"tie_rule": "random"}, "unknown tie rule 'random'"),
        ({"score_precision": "float16"}, "unknown score precision 'float16'"),
        ({"relevance_level": -1}, "relevance level (-l) -1 must be an integer >= 1"),
        ({"relevance_level": True}, "relevance level (-l) True must be an integer"),
        ({"relevance_level": 0}, "relevance level (-l) 0 is not supported: pytrec_eval"),
        ({"max_results": 0}, "max results per query (-M) 0 must be an integer >= 1"),
        ({"judged_only": "yes"}, "judged_only 'yes' must be true or false"),
        ({"measures": ("ndcg@ten",)}, "unknown measure 'ndcg@ten'"),
        ({"measures": ()}, "no measure given"),
        ({"measures": "map"}, "must be a sequence of names"),
    ],
)
def test_invalid_values_are_one_line_usage_errors(changes, needle):
    with pytest.raises(UsageError) as info:
        ScoringProtocol(**changes)
    line = info.value.one_line()
    assert needle in line and "\n" not in line


def test_from_dict_refuses_unknown_fields():
    with pytest.raises(UsageError, match="unknown scoring protocol field 'ties'"):
        ScoringProtocol.from_dict({"ties": "doc-id"})


def test_evaluate_accepts_a_protocol():
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 0.5, "b": 0.9}}
    by_protocol = M.evaluate(qrels, run, ScoringProtocol(measures=("p_at_1", "mrr")))
    assert by_protocol == M.evaluate(qrels, run, ["p_at_1", "mrr"]) == {"q": {"p_at_1": 0.0, "mrr": 0.5}}
    assert M.evaluate(qrels, run, protocol=ScoringProtocol(measures=("mrr",))) == {"q": {"mrr": 0.5}}

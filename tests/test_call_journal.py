"""The journal of paid calls (`call_journal.CallJournal`): an answer is reused only for the very same call."""

from __future__ import annotations

from evals_repro.base.call_journal import CallJournal, journal_path


def test_an_answer_is_reused_only_for_the_same_identity_and_parts(tmp_path):
    path = journal_path(tmp_path, "bm25+cohere@10", "heat-pumps")
    calls: list[str] = []

    def paid(answer):
        def call():
            calls.append(answer)
            return answer

        return call

    journal = CallJournal(path, {"model": "rerank-v4.0-pro"})
    assert journal.answer(["q", "d1", "d2"], paid([0.5, 0.25])) == [0.5, 0.25]
    journal.close()
    again = CallJournal(path, {"model": "rerank-v4.0-pro"})  # a resumed run
    assert again.answer(["q", "d1", "d2"], paid([9.0, 9.0])) == [0.5, 0.25] and again.reused == 1
    assert again.answer(["q", "d2", "d1"], paid([0.1, 0.2])) == [0.1, 0.2]  # other documents: paid
    assert again.answer(["q", "d1d2"], paid([0.3])) == [0.3]  # parts are separated, not concatenated
    again.close()
    other = CallJournal(path, {"model": "rerank-v4.0-fast"})  # another model never reuses an answer
    assert other.answer(["q", "d1", "d2"], paid([0.7, 0.6])) == [0.7, 0.6]
    other.close()
    assert calls == [[0.5, 0.25], [0.1, 0.2], [0.3], [0.7, 0.6]]


def test_a_torn_last_answer_is_paid_again_and_the_rest_kept(tmp_path):
    path = journal_path(tmp_path, "m", "s")
    journal = CallJournal(path, "id")
    journal.answer(["a"], lambda: 1.0)
    journal.answer(["b"], lambda: 2.0)
    journal.close()
    path.write_bytes(path.read_bytes()[:-7])  # killed while writing the second answer
    resumed = CallJournal(path, "id")
    paid: list[str] = []
    assert resumed.answer(["a"], lambda: paid.append("a") or 0.0) == 1.0
    assert resumed.answer(["b"], lambda: paid.append("b") or 2.0) == 2.0
    assert paid == ["b"]
    resumed.close()
    assert len(path.read_bytes().splitlines()) == 2

"""The block reader of TREC runs and qrels (metrics/trec_io: blocks, columns, numbers) reads what a line reader reads.

The oracle here is the format's definition in a few lines of plain Python (split on newlines, then on whitespace,
`#` lines and blank lines skipped, `float()` / `int()` of the value), run on files drawn at random from the
shapes real runs take (tabs, runs of spaces, CRLF, comments, extra columns, queries that interleave or span
blocks, non-ASCII ids, exponents, long and negative scores). Blocks are made tiny so that every file crosses
many of them, and the NumPy path and the line path both serve.
"""

from __future__ import annotations

import gzip
import itertools
import math
import random

import numpy as np
import pytest

from evals_repro.base.errors import DataError
from evals_repro.metrics.trec_io import blocks
from evals_repro.metrics.trec_io.numbers import read_floats, read_ints
from evals_repro.metrics.trec_io.read import read_trec_qrels, read_trec_run_and_tag
from evals_repro.records.runs import encode_run, read_saved_qrels, read_saved_run, write_trec_qrels


def oracle(text: str, value: int, convert):
    """`{qid: {doc: value}}` and the last tag, by the format's definition."""
    table: dict[str, dict[str, float]] = {}
    tag = ""
    for line in text.split("\n"):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        table.setdefault(fields[0], {})[fields[2]] = convert(fields[value])
        if len(fields) > 5:
            tag = fields[5]
    return table, tag


SCORES = [
    lambda r: f"{r.uniform(0, 30):.4f}",
    lambda r: f"{r.uniform(-30, 30):.6f}",
    lambda r: repr(r.uniform(-1, 1) * 10 ** r.randint(-30, 30)),
    lambda r: f"{r.uniform(0, 1):.3e}",
    lambda r: str(r.randint(-5, 5000)),
    lambda r: r.choice(["inf", "-inf", "+7", "-0", "0.", ".5", "1_000.5", "00012.50", "1E3"]),
    lambda r: f"{r.uniform(0, 1e6):.10f}",  # 16 digits and more
]
QIDS = [
    lambda r, i: f"q{i}",
    lambda r, i: f"topic-long-prefix-{i:05d}",  # ids differ only past their first 16 bytes
    lambda r, i: str(i * 10 ** r.randint(0, 2)),  # "1" beside "10", "100": same bytes, other lengths
    lambda r, i: f"qé{i}" if r.random() < 0.1 else f"q{i}",
]


def random_run(rng: random.Random) -> str:
    separators = rng.choice([[" "], ["\t"], [" ", "  ", "\t"], [" ", "\x0b", "\x1c", "\u00a0"]])
    newline = rng.choice(["\n", "\n", "\r\n"])
    score = rng.choice(SCORES)
    qid = rng.choice(QIDS)
    extra = rng.random() < 0.2
    lines = ["# a comment line"] if rng.random() < 0.3 else []
    queries = list(range(rng.randint(1, 12)))
    order = [q for q in queries for _ in range(rng.randint(0, 25))]
    if rng.random() < 0.3:
        rng.shuffle(order)  # one query's lines apart from each other
    seen: set[tuple[str, str]] = set()
    for number, q in enumerate(order):
        name = qid(rng, q)
        doc = f"d{rng.randint(0, 60)}" if rng.random() < 0.9 else f"doc·{rng.randint(0, 60)}"
        if (name, doc) in seen:
            continue
        seen.add((name, doc))
        fields = [name, "Q0", doc, str(number + 1), score(rng), rng.choice(["tag", "run-b"])]
        if extra:
            fields.append("extra")
        sep = rng.choice(separators)
        line = sep.join(fields)
        if rng.random() < 0.05:
            line = "  " + line + " \t"
        lines.append(line)
        if rng.random() < 0.03:
            lines.append(rng.choice(["", "   ", "#comment between", "\t"]))
    text = newline.join(lines)
    return text + (newline if rng.random() < 0.8 else "")


@pytest.fixture
def tiny_blocks(monkeypatch):
    def use(size: int) -> None:
        monkeypatch.setattr(blocks, "BLOCK_BYTES", size)

    return use


def test_runs_read_as_the_format_defines_them(tmp_path, tiny_blocks):
    rng = random.Random(20240601)
    for trial in range(150):
        text = random_run(rng)
        expected, tag = oracle(text, 4, float)
        if not expected:
            continue
        path = tmp_path / f"run{trial}.txt"
        path.write_bytes(text.encode("utf-8"))
        if trial % 3 == 0:
            path.write_bytes(gzip.compress(text.encode("utf-8")))
        tiny_blocks(rng.choice([16, 64, 300, 4096]))
        run, got_tag = read_trec_run_and_tag(path)
        assert run == expected, text
        assert [list(docs) for docs in run.values()] == [list(docs) for docs in expected.values()]
        assert list(run) == list(expected)  # queries in the order they first appear
        assert got_tag == tag
        signs = [math.copysign(1, v) for docs in run.values() for v in docs.values()]
        assert signs == [math.copysign(1, v) for docs in expected.values() for v in docs.values()]  # -0.0 too


def test_qrels_read_as_the_format_defines_them(tmp_path, tiny_blocks):
    rng = random.Random(7)
    for trial in range(60):
        lines = ["# judged by hand"] if trial % 4 == 0 else []
        for q in range(rng.randint(1, 8)):
            for d in rng.sample(range(100), rng.randint(1, 30)):
                grade = rng.choice(["0", "1", "2", "-1", "+3", "007", "1_0", "99999999999999999999"])
                lines.append(rng.choice([" ", "\t", "  "]).join([f"q{q}", "0", f"d{d}", grade]))
        text = "\n".join(lines) + "\n"
        path = tmp_path / f"qrels{trial}.txt"
        path.write_text(text)
        tiny_blocks(rng.choice([16, 100, 4096]))
        assert read_trec_qrels(path) == oracle(text, 3, int)[0]


def test_a_long_file_reads_the_same_with_default_blocks(tmp_path):
    """Many blocks of the default size (the NumPy path throughout), ties and repeated doc ids across queries."""
    rng = np.random.default_rng(3)
    lines = []
    for q in range(300):
        docs = rng.choice(5000, 400, replace=False)
        scores = np.round(rng.random(400) * 20, 2)
        lines += [f"q{q} Q0 d{d} {r + 1} {s:.2f} bm25" for r, (d, s) in enumerate(zip(docs, scores))]
    text = "\n".join(lines) + "\n"
    path = tmp_path / "run.txt"
    path.write_text(text)
    assert len(text) > 3 * blocks.BLOCK_BYTES
    assert read_trec_run_and_tag(path) == oracle(text, 4, float)


# -- problems are named at the line they are on, whichever block holds it ----------------------------------


def good_lines(n: int) -> list[str]:
    return [f"q{i // 10} Q0 d{i} {i % 10 + 1} {i / 7:.5f} tag" for i in range(n)]


@pytest.mark.parametrize("size", [64, 4096, None])
@pytest.mark.parametrize(
    "bad, message",
    [
        ("q9 Q0 d1 1 2.5", "expected at least 6 columns, got 5"),
        ("q9 Q0 d1 1 high tag", "score 'high' is not a number"),
        ("q9 Q0 d1 1 nan tag", "score is NaN"),
        ("q9 Q0 d1 1 1e tag", "score '1e' is not a number"),
        ("q9 Q0 d1 1 1.2.3 tag", "score '1.2.3' is not a number"),
    ],
)
def test_a_bad_line_is_named_by_its_number(tmp_path, tiny_blocks, size, bad, message):
    lines = good_lines(500)
    lines.insert(317, bad)
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n")
    if size:
        tiny_blocks(size)
    with pytest.raises(DataError) as caught:
        read_trec_run_and_tag(path)
    assert caught.value.message == f"{path}:318: {message}"


@pytest.mark.parametrize("size", [64, None])
def test_a_repeated_document_names_both_lines_across_blocks(tmp_path, tiny_blocks, size):
    lines = good_lines(400)
    lines.append("q3 Q0 d35 9 0.1 tag")  # d35 of q3 is line 36
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n")
    if size:
        tiny_blocks(size)
    with pytest.raises(DataError) as caught:
        read_trec_run_and_tag(path)
    assert caught.value.message == f"{path}:401: document d35 is listed twice for query q3 (first at line 36)"


def test_the_first_problem_in_the_file_is_the_one_named(tmp_path, tiny_blocks):
    """A malformed line before a repeated document, in one block: the earlier line is named, as a line reader would."""
    lines = good_lines(50)
    lines[20] = "q2 Q0 d20 1 oops tag"
    lines[30] = "q0 Q0 d1 1 0.5 tag"  # repeats line 2's document, but after line 21
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n")
    tiny_blocks(1 << 16)
    with pytest.raises(DataError, match=rf"{path}:21: score 'oops' is not a number"):
        read_trec_run_and_tag(path)


def test_an_overlong_line_after_a_bad_one_in_the_same_block_names_the_bad_one(tmp_path):
    lines = good_lines(10)
    lines[4] = "q0 Q0 d4"
    lines.append("x" * (blocks.MAX_LINE_BYTES + 10))
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as caught:
        read_trec_run_and_tag(path)
    assert caught.value.message == f"{path}:5: expected at least 6 columns, got 3"


@pytest.mark.parametrize("newline", [True, False])
def test_an_overlong_line_after_many_good_blocks_is_named(tmp_path, newline):
    lines = good_lines(30_000)  # past a default block
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n" + "x" * (blocks.MAX_LINE_BYTES + 1) + ("\n" if newline else ""))
    with pytest.raises(DataError) as caught:
        read_trec_run_and_tag(path)
    assert caught.value.message == f"{path}:30001: line is longer than 1 MiB; this does not look like a run file"


def test_a_nul_or_control_byte_goes_to_the_line_reader(tmp_path, tiny_blocks):
    """Not whitespace to str.split(), so part of the id, as the line reader has it."""
    path = tmp_path / "run.txt"
    path.write_bytes(b"q1 Q0 d\x001 1 2.5 t\nq1 Q0 d\x07 2 1.5 t\n")
    assert read_trec_run_and_tag(path) == ({"q1": {"d\x001": 2.5, "d\x07": 1.5}}, "t")


# -- numbers: exactly float() and int() ---------------------------------------------------------------------


def parse_one(parse, text: str):
    block = (text + " tag\n").encode()
    got = parse(block, np.array([0]), np.array([len(text)]))
    return None if got is None else got[0].item()


def python_value(convert, text: str):
    try:
        value = convert(text)
    except ValueError:
        return None
    return None if isinstance(value, float) and math.isnan(value) else value


SHORT = ["".join(chars) for n in range(1, 6) for chars in itertools.product("05.+-", repeat=n)]


@pytest.mark.parametrize("parse, convert", [(read_floats, float), (read_ints, int)])
def test_every_short_spelling_reads_as_python_reads_it(parse, convert):
    """Every string of up to five of `0 5 . + -`: what Python refuses is refused, the rest read alike (sign of 0 too)."""
    for text in SHORT:
        got, want = parse_one(parse, text), python_value(convert, text)
        assert got == want and (want is None or math.copysign(1, got) == math.copysign(1, want)), text


def test_scores_of_every_length_read_as_float_reads_them():
    rng = random.Random(11)
    texts = [f"{rng.uniform(-1, 1) * 10 ** rng.randint(-6, 9):.{rng.randint(0, 14)}f}" for _ in range(20_000)]
    texts += [repr(rng.random() * 10 ** rng.randint(-40, 40)) for _ in range(5_000)]
    texts += ["9007199254740993", "9007199254740992", "0.9007199254740993", "123456789012345.6", "1" * 17]
    texts += ["0000000000000001", "-000000000000000.5", "1e22", "1e23", "4.9e-324", "1.7976931348623159e308"]
    block = "".join(t + " t\n" for t in texts).encode()
    lengths = np.array([len(t) for t in texts])
    ends = np.cumsum(lengths + 3) - 3
    got = read_floats(block, ends - lengths, ends)
    want = np.array([float(t) for t in texts])
    assert got is not None and got.tolist() == want.tolist()
    assert (np.signbit(got) == np.signbit(want)).all()


def test_grades_past_int64_are_left_to_the_line_reader():
    assert parse_one(read_ints, "99999999999999999999") is None
    assert parse_one(read_ints, "-9223372036854775808") == -9223372036854775808


# -- saved runs round-trip ---------------------------------------------------------------------------------


def test_a_saved_run_reads_back_the_same_doubles(tmp_path):
    rng = random.Random(5)
    run = {
        f"q{q}": {
            f"d{d}": rng.choice([rng.random(), -rng.random() * 1e-9, rng.random() * 1e300, 0.0, float(d)])
            for d in range(50)
        }
        for q in range(40)
    }
    path = tmp_path / "run.gz"
    path.write_bytes(encode_run(run, "my run").data)
    assert read_saved_run(path) == run


def test_an_empty_saved_run_and_qrels_read_as_empty(tmp_path):
    path = tmp_path / "run.gz"
    path.write_bytes(encode_run({}, "bm25").data)
    assert read_saved_run(path) == {}
    written = write_trec_qrels(tmp_path / "qrels.gz", {})
    assert read_saved_qrels(written.path) == {}

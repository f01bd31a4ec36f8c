"""Write the synthetic inputs of this folder (qrels.synth, qrels.covered, qrels.gains, run.synth): hard cases for trec_eval parity.

Deterministic (fixed seed; the files are committed, this script says how they were made):
exact score ties broken by docno, near-ties that float32 merges but doubles keep apart
(0.3 vs 0.30000001, 1000000.01 vs 1000000.02), graded qrels 0..3 with -1 ("in pool, unjudged"),
queries judged with grade 0 only or -1 only, queries in the qrels but not in the run and the
other way round, docnos whose string order differs from their numeric order, a long ranking.
Run from the repository root: `python tests/data/trec_eval10/make_inputs.py`; with
`--cranfield <cranfield folder> <out folder>` it writes the Cranfield inputs (see cranfield_inputs).
"""

from __future__ import annotations

import random
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    rnd = random.Random(20261201)
    qrels: list[tuple[str, str, int]] = []
    run: list[tuple[str, str, str]] = []  # (qid, docno, score text)

    # 101: graded 0..3, scores from a few values: many exact ties broken by docno descending.
    for i in range(40):
        doc = f"d{i}"
        if i % 3 == 0:
            qrels.append(("101", doc, rnd.choice((0, 1, 2, 3))))
        run.append(("101", doc, rnd.choice(("1", "0.5", "0.25", "0.125", "2"))))
    qrels += [("101", "d100", 3), ("101", "d101", 2)]  # relevant, never retrieved

    # 102: near-ties at float32 resolution, relevance alternating so the order matters.
    near = ("0.3", "0.30000001", "0.29999999", "0.30000002", "0.1", "0.10000001", "0.7", "0.70000003")
    for i, score in enumerate(near * 3):
        doc = f"n{i:02d}"
        run.append(("102", doc, score))
        qrels.append(("102", doc, (i * 7) % 4 if i % 2 else 0))

    # 103: judged with grade 0 only (num_rel 0), retrieved.
    for i in range(12):
        qrels.append(("103", f"z{i}", 0))
        run.append(("103", f"z{i}", f"{1 - i / 20:.2f}"))

    # 104: -1 grades (in pool, not judged: infAP, bpref, unj, -J) mixed with graded judgments.
    for i in range(30):
        doc = f"u{i}"
        grade = (-1, 0, 1, 2, 3, -1)[i % 6]
        if i % 5 != 4:
            qrels.append(("104", doc, grade))
        run.append(("104", doc, f"{rnd.randint(0, 9) / 4:.2f}"))

    # 105: in the qrels, no results (counts under -c only).
    qrels += [("105", "a1", 1), ("105", "a2", 2), ("105", "a3", 0)]

    # 106: results but no qrels (never scored).
    run += [("106", f"x{i}", str(10 - i)) for i in range(5)]

    # 107: large and tiny scores whose float32 values coincide; negative scores; exponents.
    big = ("1000000.01", "1000000.02", "1000000.03", "1e6", "-0.5", "-0.50000001", "1e-5", "1.00000001e-5", "0")
    for i, score in enumerate(big):
        doc = f"b{i}"
        run.append(("107", doc, score))
        qrels.append(("107", doc, i % 3))

    # 108: judged with -1 only.
    qrels += [("108", "m1", -1), ("108", "m2", -1)]
    run += [("108", "m1", "1"), ("108", "m3", "0.5")]

    # 109: a long ranking (250 results, 60 relevant at mixed grades): cutoffs 100/200, -M, Rprec_mult.
    docs = [f"L{i}" for i in range(300)]
    for doc in rnd.sample(docs, 90):
        qrels.append(("109", doc, rnd.choice((0, 1, 1, 2, 3))))
    for doc in rnd.sample(docs, 250):
        run.append(("109", doc, f"{rnd.randint(0, 400) / 100:.2f}"))

    # 110: docnos whose string order is not numeric (d9 > d10 > D10), all tied at one score.
    for doc, grade in (("d9", 1), ("d10", 0), ("D10", 2), ("d10a", 3), ("d1", 1), ("d100", 0), ("e", 2)):
        qrels.append(("110", doc, grade))
        run.append(("110", doc, "0.5"))

    # 9 and 1000: qids sorted as strings (1000 < 101 < ... < 9).
    qrels += [("9", "k1", 1), ("9", "k2", 0), ("1000", "k1", 2)]
    run += [("9", "k2", "3"), ("9", "k1", "3"), ("1000", "k1", "1"), ("1000", "k9", "2")]

    rnd.shuffle(run)  # trec_eval orders by score, not by file position
    qrels.sort(key=lambda row: (row[0], row[1]))
    (HERE / "qrels.synth").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels))
    # trec_eval 10 without -c exits (status 4) on a judged query without results: the same qrels without 105.
    covered = [row for row in qrels if row[0] != "105"]
    (HERE / "qrels.covered").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in covered))
    # trec_eval 10's ideal_dcg for a query judged with negative grades only (108) reads the previous
    # query's level counts (stale memory): the dcg fixtures use the same qrels without 108.
    gains = [row for row in qrels if row[0] != "108"]
    (HERE / "qrels.gains").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in gains))
    lines = [f"{q} Q0 {d} {i} {s} synth\n" for i, (q, d, s) in enumerate(run, start=1)]
    (HERE / "run.synth").write_text("".join(lines))


def cranfield_inputs(cranfield: Path, out: Path) -> tuple[Path, Path]:
    """Cranfield as trec_eval reads it, written to `out` at test time (never committed):
    qrels from `cranqrel` with grades 1..4 (1 most relevant) mapped to 3, 2, 1, 0 and -1 kept (trec_eval
    reads a negative grade as in the pool but unjudged); a synthetic run over the 1,400 documents:
    per query, its judged documents and 60 others, scores with two decimals (many exact ties) and
    one float32 near-tie per query."""
    mapping = {1: 3, 2: 2, 3: 1, 4: 0, -1: -1}
    qrels: dict[str, dict[str, int]] = {}
    for line in (cranfield / "cranqrel").read_text().splitlines():
        if line.strip():
            qid, doc, grade = line.split()
            qrels.setdefault(qid, {})[doc] = mapping[int(grade)]
    rnd = random.Random(1400)
    lines = []
    for qid in sorted(qrels, key=int):
        docs = sorted(set(qrels[qid]) | {str(rnd.randint(1, 1400)) for _ in range(60)}, key=int)
        scores = {doc: f"{rnd.randint(0, 99) / 100:.2f}" for doc in docs}
        scores[docs[0]], scores[docs[-1]] = "0.5", "0.50000001"
        lines += [f"{qid} Q0 {doc} 0 {score} cran\n" for doc, score in scores.items()]
    qrels_path, run_path = out / "qrels.cranfield", out / "run.cranfield"
    qrels_path.write_text("".join(f"{q} 0 {d} {g}\n" for q in sorted(qrels) for d, g in sorted(qrels[q].items())))
    run_path.write_text("".join(lines))
    return qrels_path, run_path


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--cranfield"]:  # make_inputs.py --cranfield <shared>/data/cranfield <folder>
        cranfield_inputs(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        main()

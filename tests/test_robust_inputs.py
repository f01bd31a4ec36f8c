"""Bad or unusual inputs (issue 22): each refused in one line naming the file, option or key, exit 2, before
any work; no traceback, no raw library warning."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from evals_repro.cli import main
from evals_repro.metrics.trec_files import MAX_LINE_BYTES

RUN_LINE = "q1 Q0 d1 1 2.5 tag\n"
QRELS_LINE = "q1 0 d1 1\n"


def one_error_line(capsys) -> tuple[str, str]:
    """(the one `error:` line, all of stderr); no traceback, no second error line."""
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0], err


# -- item 4: a corrupt gzip body ----------------------------------------------------------------------------


def corrupt_gzip(path: Path, line: str) -> Path:
    """A gzip header followed by a deflate body zlib refuses ("invalid distance too far back")."""
    body = gzip.compress("".join(line.replace("1", str(i), 1) for i in range(2000)).encode())
    damaged = bytearray(body)
    damaged[40:60] = bytes(range(200, 220))
    path.write_bytes(bytes(damaged))
    return path


def truncated_gzip(path: Path, line: str) -> Path:
    """Valid lines, cut off halfway through the gzip stream (no end-of-stream marker)."""
    body = gzip.compress("".join(line.replace("1", str(i), 1) for i in range(2000)).encode())
    path.write_bytes(body[: len(body) // 2])
    return path


@pytest.mark.parametrize("damage", [corrupt_gzip, truncated_gzip])
@pytest.mark.parametrize("option", ["--qrels", "--run"])
def test_evaluate_names_a_damaged_gzip_file(tmp_path, capsys, option, damage):
    good = {"--qrels": tmp_path / "qrels.txt", "--run": tmp_path / "run.txt"}
    good["--qrels"].write_text(QRELS_LINE)
    good["--run"].write_text(RUN_LINE)
    bad = damage(tmp_path / "bad.gz", QRELS_LINE if option == "--qrels" else RUN_LINE)
    kind = option.removeprefix("--")
    args = {o: str(bad if o == option else p) for o, p in good.items()}
    code = main(["evaluate", "--qrels", args["--qrels"], "--run", args["--run"]])
    line, _ = one_error_line(capsys)
    assert code == 2
    assert line.startswith(f"error: {bad}: the {kind} file is not valid gzip (")
    assert "error: error" not in line and "damaged or cut short" in line


# -- item 7: line-length cap ---------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["--qrels", "--run"])
def test_a_line_past_the_cap_is_refused_naming_the_line(tmp_path, capsys, option):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text(QRELS_LINE)
    run.write_text(RUN_LINE)
    target = qrels if option == "--qrels" else run
    with open(target, "ab") as handle:  # line 2: one byte past the cap, no newline
        handle.write(b"x" * (MAX_LINE_BYTES + 1))
    code = main(["evaluate", "--qrels", str(qrels), "--run", str(run)])
    line, _ = one_error_line(capsys)
    assert code == 2 and line.startswith(f"error: {target}:2: line is longer than 1 MiB")


def test_a_line_at_the_cap_is_read(tmp_path, capsys):
    """A line of exactly MAX_LINE_BYTES (its newline not counted) is data, not refused: a long tag."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text(QRELS_LINE)
    prefix = "q1 Q0 d1 1 2.5 "
    run.write_text(prefix + "t" * (MAX_LINE_BYTES - len(prefix)) + "\n")
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "P.1"]) == 0
    out = capsys.readouterr().out
    assert "P_1" in out and "1.0000" in out  # d1 judged 1 at rank 1: P@1 = 1 by hand

"""Bad or unusual inputs (issue 22): each refused in one line naming the file, option or key, exit 2, before
any work; no traceback, no raw library warning."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from evals_repro.cli import main
from evals_repro.metrics.trec_io.read import MAX_LINE_BYTES

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


# -- items 5 and 8: .env and keys, checked before any work --------------------------------------------------

KEY_VARIABLES = (
    "VOYAGE_API_KEY",
    "COHERE_API_KEY",
    "CO_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MXBAI_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


@pytest.fixture
def no_keys(monkeypatch, tmp_path):
    """No key in the environment, a fresh `.env` read, the working directory a temp folder (for `.env`)."""
    from evals_repro.providers import keys

    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(keys, "_loaded", False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    saved = dict(os.environ)
    yield work
    os.environ.clear()  # what a `.env` set behind monkeypatch's back does not outlive the test
    os.environ.update(saved)


@pytest.fixture
def no_loading(monkeypatch):
    """Any data load fails the test: a refusal must come before it."""
    import evals_repro.runner.evaluation as evaluation

    def refuse(*args, **kwargs):
        raise AssertionError("data was loaded before the refusal")

    monkeypatch.setattr(evaluation, "load_subset", refuse)


def key_commands(tmp_path: Path) -> dict[str, list[str]]:
    """A command of each kind that reads `.env` (for its keys)."""
    return {
        "run": ["run", "voyage-4-lite", "-b", "sample", "--results-dir", str(tmp_path / "r"), "--cache-dir", "c"],
        "rerank-study quality": ["rerank-study", "quality", "--study-dir", str(tmp_path / "study")],
        "rerank-study latency": ["rerank-study", "latency", "--study-dir", str(tmp_path / "study")],
        "answer": ["answer", "--oracle", "--generator", "gemini:g", "--judge", "openai:j", "--out-dir", "out"],
    }


@pytest.mark.parametrize("command", ["run", "rerank-study quality", "rerank-study latency", "answer"])
def test_a_dotenv_that_is_not_utf8_is_one_line_naming_it(no_keys, no_loading, tmp_path, capsys, command):
    (no_keys / ".env").write_bytes(b"# keys\nVOYAGE_API_KEY=caf\xe9\xff\n")
    code = main(key_commands(tmp_path)[command])
    line, _ = one_error_line(capsys)
    assert code == 2, line
    assert line.startswith(f"error: {no_keys / '.env'}:2: the .env file is not valid UTF-8 (byte 0xe9)")
    assert "caf" not in line  # nothing of the value is shown


@pytest.mark.parametrize("command", ["run", "rerank-study quality", "rerank-study latency", "answer"])
def test_a_dotenv_line_that_does_not_parse_is_one_line_naming_it(no_keys, no_loading, tmp_path, capsys, command):
    (no_keys / ".env").write_text("# keys\nGEMINI_API_KEY=abc\nVOYAGE_API_KEY='abc' def\n")
    code = main(key_commands(tmp_path)[command])
    line, err = one_error_line(capsys)
    assert code == 2, line
    assert line.startswith(f"error: {no_keys / '.env'}:3: the .env file has a line that cannot be parsed")
    assert "python-dotenv" not in err and "abc" not in err


def test_a_good_dotenv_still_sets_keys_without_overriding_the_environment(no_keys, monkeypatch):
    from evals_repro.providers import keys

    (no_keys / ".env").write_text('\ufeffVOYAGE_API_KEY="from-dotenv"\nCOHERE_API_KEY=${VOYAGE_API_KEY}-too\n')
    monkeypatch.setenv("GEMINI_API_KEY", "from-env")
    assert keys.require_keys(["VOYAGE_API_KEY", "COHERE_API_KEY", "GEMINI_API_KEY"]) == {
        "VOYAGE_API_KEY": "from-dotenv",
        "COHERE_API_KEY": "from-dotenv-too",  # python-dotenv's ${VAR} expansion is kept
        "GEMINI_API_KEY": "from-env",
    }
    monkeypatch.delenv("VOYAGE_API_KEY")  # load_dotenv_once set it; monkeypatch does not know
    monkeypatch.delenv("COHERE_API_KEY")


def test_bm25_with_a_language_it_cannot_stem_is_refused_before_loading(no_loading, tmp_path, capsys):
    from beir_folder import write_beir_folder

    folder = write_beir_folder(tmp_path / "beir", {"d1": "tlhIngan Hol"}, {"q1": "Hol"}, [("q1", "d1", 1)])
    args = ["run", "bm25", "-b", folder, "--language", "klingon", "--results-dir", str(tmp_path / "r")]
    code = main([*args, "--cache-dir", str(tmp_path / "c")])
    line, err = one_error_line(capsys)
    assert code == 2
    assert line.startswith("error: --language klingon: method bm25 has no text analysis for corpus language")
    assert err.count("english") == 1  # the list of languages, once
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").rglob("*.json"))


def test_an_empty_language_is_refused_not_read_as_english(no_loading, tmp_path, capsys):
    from beir_folder import write_beir_folder

    folder = write_beir_folder(tmp_path / "beir", {"d1": "x"}, {"q1": "x"}, [("q1", "d1", 1)])
    code = main(["run", "bm25", "-b", folder, "--language", " ", "--results-dir", str(tmp_path / "r")])
    line, _ = one_error_line(capsys)
    assert code == 2 and line.startswith("error: --language was given an empty value")


def test_bm25_in_a_fusion_checks_the_language_too(no_loading, tmp_path, capsys):
    from beir_folder import write_beir_folder

    folder = write_beir_folder(tmp_path / "beir", {"d1": "x"}, {"q1": "x"}, [("q1", "d1", 1)])
    code = main(["run", "rrf:bm25+minilm", "-b", folder, "--language", "xx", "--results-dir", str(tmp_path / "r")])
    line, _ = one_error_line(capsys)
    assert code == 2 and line.startswith("error: --language xx: method bm25 has no text analysis")


def test_a_key_with_a_newline_is_refused_before_loading_or_any_request(no_keys, no_loading, tmp_path, capsys):
    from fakes.voyage import FakeVoyage

    with FakeVoyage() as fake:
        import os

        os.environ["VOYAGE_BASE_URL"] = fake.url + "/v1"
        os.environ["VOYAGE_API_KEY"] = "pa-abc\ndef-1234567890"
        try:
            code = main(key_commands(tmp_path)["run"])
        finally:
            del os.environ["VOYAGE_BASE_URL"], os.environ["VOYAGE_API_KEY"]
        assert fake.requests == []
    line, err = one_error_line(capsys)
    assert code == 2
    assert line.startswith("error: malformed API key: VOYAGE_API_KEY holds a line break (character 7 of 21)")
    assert "abc" not in err and "1234567890" not in err and "spent" not in err


@pytest.mark.parametrize(
    "command, expected",
    [
        ("rerank-study quality", "MXBAI_API_KEY, VOYAGE_API_KEY, COHERE_API_KEY or CO_API_KEY are not set"),
        ("rerank-study latency", "MXBAI_API_KEY, VOYAGE_API_KEY, COHERE_API_KEY or CO_API_KEY are not set"),
        ("answer", "GEMINI_API_KEY or GOOGLE_API_KEY, OPENAI_API_KEY are not set"),
    ],
)
def test_every_missing_key_is_named_in_one_line(no_keys, tmp_path, capsys, command, expected):
    code = main(key_commands(tmp_path)[command])
    line, _ = one_error_line(capsys)
    assert code == 2 and line.startswith(f"error: missing API keys: {expected}")
    assert not (tmp_path / "study").exists() and not (no_keys / "out").exists()


def test_a_run_needing_three_keys_names_them_all(no_keys, no_loading, tmp_path, capsys):
    method = "rrf:voyage-4-lite+gemini-embedding-2+cohere@10"
    code = main(
        ["run", method, "-b", "sample", "--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")]
    )
    line, _ = one_error_line(capsys)
    assert code == 2 and line.startswith(
        "error: missing API keys: COHERE_API_KEY or CO_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY, VOYAGE_API_KEY "
        "are not set"
    )


# -- item 9: a refusal imports nothing heavy (the timings: tests/perf/test_refusal_perf.py) ------------------

HEAVY = ("voyageai", "langchain_text_splitters", "cohere", "google.genai", "datasets", "pandas", "pyarrow", "numba")


def modules_loaded_by(args: list[str], env: dict[str, str], cwd: Path) -> tuple[set[str], int, str]:
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json, sys\nfrom evals_repro.cli import main\ncode = main(sys.argv[1:])\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\nsys.exit(code)"
    )
    base = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES and not k.startswith("HF_")}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env={**base, **env}, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    *lines, modules = done.stderr.strip().splitlines()
    return set(json.loads(modules)), done.returncode, "\n".join(lines)


def test_a_missing_key_is_refused_before_any_sdk_is_imported(tmp_path):
    args = ["run", "voyage-4-large", "-b", "sample", "--results-dir", str(tmp_path / "r"), "--cache-dir", "c"]
    loaded, code, err = modules_loaded_by(args, {}, tmp_path)
    assert code == 2 and "missing API key: VOYAGE_API_KEY" in err
    assert sorted(m for m in HEAVY if m in loaded) == []


@pytest.mark.parametrize("benchmark", ["vidore-v3-rcp", "vidore-v3-rcp-retrieval"])
def test_an_rcp_benchmark_offline_without_a_cache_is_one_line(tmp_path, benchmark):
    """It said "no file <subset>/corpus.parquet: check the subset name" once per subset (48), then exit 2."""
    args = ["run", "bm25", "-b", benchmark, "--results-dir", str(tmp_path / "r"), "--cache-dir", "c"]
    _, code, err = modules_loaded_by(args, {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}, tmp_path)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("error: fabianschmidt-cohere/rcp-ndcg-vidore-v3@") and "not in the offline cache" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # a refusal creates nothing: no results, no cache


@pytest.mark.parametrize("offline", [True, False])
def test_a_hub_benchmark_without_a_cache_is_refused_before_datasets_is_imported(tmp_path, offline):
    import socket

    with socket.socket() as sock:  # a port nothing listens on: the Hub is unreachable
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {"HF_HOME": str(tmp_path / "hf"), "HF_ENDPOINT": f"http://127.0.0.1:{port}"}
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    args = ["run", "bm25", "-b", "vidore-v3", "-s", "hr", "--results-dir", str(tmp_path / "r"), "--cache-dir", "c"]
    loaded, code, err = modules_loaded_by(args, env, tmp_path)
    assert code == 2
    assert ("is not in the offline cache" if offline else "cannot reach the Hugging Face Hub") in err
    assert sorted(m for m in HEAVY if m in loaded) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # a refusal creates nothing: no results, no cache


# A refusal creates nothing: `run`'s results and cache folders are made once nothing is left to refuse (the
# first subset loaded), report's --plots folder when the figures are written.
REFUSALS_IN_AN_EMPTY_FOLDER = {
    "unknown language": ["run", "bm25", "--language", "klingon"],
    "missing key": ["run", "voyage-4-large"],
    "missing reranker key": ["run", "bm25", "-b", "sample", "--rerank", "cohere"],
    "unknown benchmark": ["run", "bm25", "-b", "nosuchbench"],
    "unknown subset": ["run", "bm25", "-b", "sample", "-s", "nosuch"],
    "unknown measure": ["run", "bm25", "-b", "sample", "-m", "ndcg_at_x"],
    "bad option": ["run", "bm25", "--top-k", "0"],
    "nested results dir": ["run", "voyage-4-large", "--results-dir", "a/b/results", "--cache-dir", "x/cache"],
    "report, unknown benchmark": ["report", "--plots", "figs", "-b", "nosuchbench"],
    "report, no results": ["report", "-b", "sample", "--baseline", "bm25", "--plots", "figs", "-o", "out/t.html"],
    "report, bad output": ["report", "-b", "sample", "--plots", "figs", "-o", "t.xyz"],
    "evaluate, missing files": ["evaluate", "--qrels", "qrels.txt", "--run", "run.txt"],
    "evaluate, bad measure": ["evaluate", "--qrels", "q.txt", "--run", "r.txt", "-m", "ndcg_at_x"],
}


@pytest.mark.parametrize("args", list(REFUSALS_IN_AN_EMPTY_FOLDER.values()), ids=list(REFUSALS_IN_AN_EMPTY_FOLDER))
def test_a_refusal_creates_nothing(no_keys, no_loading, capsys, args):
    assert main(args) == 2
    one_error_line(capsys)
    assert sorted(p.name for p in no_keys.iterdir()) == []


# -- item 6: rerank-study report --resamples ----------------------------------------------------------------


@pytest.mark.parametrize("resamples", ["-5", "0", "39"])
def test_report_refuses_too_few_resamples_in_one_line(tmp_path, capsys, resamples):
    study = tmp_path / "study"
    code = main(["rerank-study", "report", "--study-dir", str(study), "--resamples", resamples])
    line, _ = one_error_line(capsys)
    assert code == 2
    assert line.startswith(f"error: --resamples {resamples} is too few: a 95% bootstrap interval needs at least 40")
    assert not study.exists()


# -- item 10: every subset refused on its data: the reason once, exit 2, no --resume advice --------------------


def beir(folder: Path, corpus: str, queries: str, qrels: str) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(corpus)
    (folder / "queries.jsonl").write_text(queries)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return folder


CORPUS = '{"_id": "d1", "text": "heat pumps"}\n{"_id": "d2", "text": "railway maintenance"}\n'
QUERIES = '{"_id": "q1", "text": "heat pump"}\n'
QRELS = "q1\td1\t1\n"
BROKEN = {
    "bad JSON": (CORPUS + '{"_id": "d3", "text": \n', QUERIES, QRELS, "corpus.jsonl:3: not valid JSON"),
    "empty corpus": ("", QUERIES, QRELS, "corpus.jsonl: file is empty"),
    "duplicate ids": (CORPUS + '{"_id": "d1", "text": "again"}\n', QUERIES, QRELS, "1 duplicate page ids, first: d1"),
    "conflicting grades": (CORPUS, QUERIES, QRELS + "q1\td1\t2\n", "judges page d1 2, but line 2 judged it 1"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_one_broken_beir_folder_is_one_line_exit_2(tmp_path, capsys, case):
    corpus, queries, qrels, reason = BROKEN[case]
    folder = beir(tmp_path / "mine", corpus, queries, qrels)
    code = main(
        ["run", "bm25", "-b", str(folder), "--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")]
    )
    line, err = one_error_line(capsys)
    assert code == 2 and reason in line
    assert err.count(reason) == 1 and "--resume" not in err and "revision" not in err


def test_every_broken_subset_of_a_folder_is_said_once_then_exit_2(tmp_path, capsys):
    corpus, queries, qrels, _ = BROKEN["duplicate ids"]
    for name in ("one", "two"):
        beir(tmp_path / "mine" / name, corpus, queries, qrels)
    code = main(
        [
            "run",
            "bm25",
            "-b",
            str(tmp_path / "mine"),
            "--results-dir",
            str(tmp_path / "r"),
            "--cache-dir",
            str(tmp_path / "c"),
        ]
    )
    line, err = one_error_line(capsys)
    assert code == 2
    assert line == (
        "error: all 2 subsets failed on their data or options: 1 duplicate page ids, first: d1: "
        "fix it, then run the command again"
    )
    # one line per subset as it happened (each names its own folder), then the shared reason once
    assert err.count("1 duplicate page ids") == 3
    assert "--resume" not in err and "revision" not in err


def test_a_partly_failed_run_still_exits_4_and_advises_resume(tmp_path, capsys):
    corpus, queries, qrels, _ = BROKEN["duplicate ids"]
    beir(tmp_path / "mine" / "bad", corpus, queries, qrels)
    beir(tmp_path / "mine" / "good", CORPUS, QUERIES, QRELS)
    code = main(
        [
            "run",
            "bm25",
            "-b",
            str(tmp_path / "mine"),
            "--results-dir",
            str(tmp_path / "r"),
            "--cache-dir",
            str(tmp_path / "c"),
        ]
    )
    line, err = one_error_line(capsys)
    assert code == 4 and line.startswith("error: 1 of 2 subsets failed (bad): subset mine/bad (") and "--resume" in line
    assert (tmp_path / "r" / "mine" / "bm25" / "good.json").exists()


def plan_args(tmp_path: Path, folder: Path, *more: str) -> list[str]:
    """`run --plan` of a paid method (it needs no key to plan) on a user folder."""
    results = ["--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")]
    return ["run", "voyage-4-lite", "-b", str(folder), *results, *more]


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_plan_of_one_broken_beir_folder_is_its_reason_once_exit_2(tmp_path, capsys, monkeypatch, case):
    """A plan is refused as the run would be: not told to download data that is here but broken."""
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    corpus, queries, qrels, reason = BROKEN[case]
    folder = beir(tmp_path / "mine", corpus, queries, qrels)
    code = main(plan_args(tmp_path, folder, "--plan"))
    line, err = one_error_line(capsys)
    assert code == 2 and reason in line
    assert err.count(reason) == 1 and "download" not in err and "--resume" not in err


def test_a_plan_of_a_folder_whose_every_subset_is_broken_says_each_once_then_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    corpus, queries, qrels, _ = BROKEN["duplicate ids"]
    for name in ("one", "two"):
        beir(tmp_path / "mine" / name, corpus, queries, qrels)
    code = main(plan_args(tmp_path, tmp_path / "mine", "--plan"))
    line, err = one_error_line(capsys)
    assert code == 2 and line.startswith("error: all 2 subsets failed on their data or options: 1 duplicate page")
    assert err.count("1 duplicate page ids") == 3 and "download" not in err  # each subset's line, then the last


def test_a_plan_with_one_broken_subset_counts_the_others_and_names_the_reason(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    corpus, queries, qrels, _ = BROKEN["duplicate ids"]
    beir(tmp_path / "mine" / "bad", corpus, queries, qrels)
    beir(tmp_path / "mine" / "good", CORPUS, QUERIES, QRELS)
    code = main(plan_args(tmp_path, tmp_path / "mine", "--plan"))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    notes = [line for line in captured.out.splitlines() if line.startswith("note: bad:")]
    assert notes == [
        "note: bad: a run refuses it (subset mine/bad (" + str(tmp_path / "mine" / "bad") + "): 1 duplicate page "
        "ids, first: d1: fix the source data): this subset is not counted"
    ]
    assert "total: 2 requests" in captured.out  # the good subset's pages and queries


def test_max_cost_with_a_broken_subset_says_its_reason_once(tmp_path, capsys, monkeypatch):
    """--max-cost plans silently before the run: the run alone says why the broken subset failed."""
    from fakes.voyage import FakeVoyage

    corpus, queries, qrels, _ = BROKEN["duplicate ids"]
    beir(tmp_path / "mine" / "bad", corpus, queries, qrels)
    beir(tmp_path / "mine" / "good", CORPUS, QUERIES, QRELS)
    with FakeVoyage() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "test-voyage-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        code = main(plan_args(tmp_path, tmp_path / "mine", "--max-cost", "1"))
    line, err = one_error_line(capsys)
    assert code == 4 and line.startswith("error: 1 of 2 subsets failed (bad): subset mine/bad (")
    assert err.count("1 duplicate page ids") == 2  # "bad: failed: ..." as it happened, and the final line


# -- item 15: help text ------------------------------------------------------------------------------------


def help_text(monkeypatch, capsys, *command: str) -> list[str]:
    """The lines of `command --help`, rendered wide enough that no cell wraps; box borders dropped."""
    monkeypatch.setenv("COLUMNS", "1000")
    monkeypatch.setenv("TERMINAL_WIDTH", "1000")
    main([*command, "--help"])
    out = capsys.readouterr().out
    return [" ".join(line.replace("│", " ").split()) for line in out.splitlines()]


def leaf_commands():
    import typer.main

    from evals_repro.cli import app

    pending = [((), typer.main.get_command(app))]
    while pending:
        path, command = pending.pop()
        subcommands = getattr(command, "commands", None)
        if subcommands:
            pending.extend(((*path, name), sub) for name, sub in subcommands.items())
        else:
            yield path, command


def test_every_option_help_is_shown_whole_and_no_flag_shows_a_type(monkeypatch, capsys):
    """Rich markup once swallowed `[study]` ("(a benchmark, or each subset: )"); flags showed `<bool>`."""
    checked = 0
    for path, command in leaf_commands():
        lines = help_text(monkeypatch, capsys, *path)
        shown = " ".join(lines)
        assert "<bool>" not in shown, path
        for param in command.params:
            text = " ".join((param.help or "").replace("\\[", "[").split())
            if text and path + (param.name,) != ("run", "rerank"):  # `run --rerank`: filled in at render, below
                assert text in shown, (path, param.name)
                checked += 1
    assert checked > 150


def test_run_help_lists_every_registered_reranker(monkeypatch, capsys):
    from evals_repro.base.registry import RERANKERS

    row = next(line for line in help_text(monkeypatch, capsys, "run") if line.startswith("--rerank <str>"))
    names = RERANKERS.names()
    assert len(names) >= 7 and row.endswith(": " + ", ".join(names) + ".")


def test_run_help_shows_the_defaults_of_options_left_unset(monkeypatch, capsys):
    from evals_repro.methods.pipeline import DEFAULT_RERANK_DEPTH
    from evals_repro.providers.settings import DEFAULT_MAX_ATTEMPTS, DEFAULT_TIMEOUT, DEFAULTS
    from evals_repro.stores.search import DEFAULT_RERANK_TOP_K

    lines = help_text(monkeypatch, capsys, "run")

    def row(option: str) -> str:
        return next(line for line in lines if line.startswith(option + " "))

    assert row("--rerank-depth").endswith(f"[default: ({DEFAULT_RERANK_DEPTH})]")
    assert row("--rerank-top-k").endswith(f"[default: ({DEFAULT_RERANK_TOP_K})]")
    assert row("--timeout").endswith(f"[default: ({DEFAULT_TIMEOUT:g})]")
    assert row("--max-attempts").endswith(f"[default: ({DEFAULT_MAX_ATTEMPTS})]")
    # The published per-provider budgets (providers/settings.py's table), tokens and requests per minute.
    published = {"voyage": ("3,000,000", "2,000"), "cohere": ("none", "2,000"), "gemini": ("1,000,000", "3,000")}
    published["mixedbread"] = ("1,000,000", "300")
    for provider, (tpm, rpm) in published.items():
        assert DEFAULTS[provider][:2] == (int(tpm.replace(",", "").replace("none", "0")), int(rpm.replace(",", "")))
        assert row(f"--{provider}-tpm").endswith(f"[default: ({tpm})]")
        assert row(f"--{provider}-rpm").endswith(f"[default: ({rpm})]")
        assert row(f"--{provider}-interval").endswith("[default: (none)]")


def test_study_help_shows_the_study_defaults(monkeypatch, capsys):
    from evals_repro.providers.settings import DEFAULT_TIMEOUT
    from evals_repro.study.quality import STUDY_DEFAULT_OPTIONS

    assert STUDY_DEFAULT_OPTIONS == {"voyage_tpm": 2_000_000, "voyage_interval": 3.0}
    for command in ("quality", "latency"):
        lines = help_text(monkeypatch, capsys, "rerank-study", command)
        assert next(x for x in lines if x.startswith("--voyage-tpm ")).endswith("[default: (2,000,000)]")
        assert next(x for x in lines if x.startswith("--voyage-interval ")).endswith("[default: (3)]")
        assert next(x for x in lines if x.startswith("--timeout ")).endswith(f"[default: ({DEFAULT_TIMEOUT:g})]")


@pytest.mark.parametrize("decimals", ["7", "20"])
def test_report_decimals_past_the_cap_are_refused(tmp_path, capsys, decimals):
    code = main(["report", "-b", "sample", "--results-dir", str(tmp_path), "--decimals", decimals])
    line, _ = one_error_line(capsys)
    assert code == 2 and "'--decimals'" in line and "less than or equal to 6" in line


# -- item 7 for BEIR folders: their qrels and JSONL files are read with a line cap too ------------------------


@pytest.mark.parametrize("target", ["qrels/test.tsv", "corpus.jsonl"])
def test_a_beir_file_without_line_breaks_is_refused_naming_the_line(tmp_path, capsys, monkeypatch, target):
    from evals_repro.benchmarks import beir as beir_loader

    monkeypatch.setattr(beir_loader, "MAX_JSONL_LINE", 2 << 20)  # the real cap is 16 MiB: a smaller file here
    folder = beir(tmp_path / "mine", CORPUS, QUERIES, QRELS)
    with open(folder / target, "a") as handle:  # the next line: one character past its cap, no line break
        handle.write("x" * ((2 << 20 if target.endswith("jsonl") else 1 << 20) + 1))
    code = main(["run", "bm25", "-b", str(folder), "--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path)])
    line, _ = one_error_line(capsys)
    expected_line = 3  # corpus: 2 records before it; qrels: a header and 1 row
    assert code == 2 and line.startswith(f"error: {folder / target}:{expected_line}: line is longer than")


def test_every_command_shows_the_defaults_of_its_provider_options(monkeypatch, capsys):
    """--timeout, --max-attempts and the per-provider budgets are None when not given (the library default
    applies): --help still says what that default is, in every command that has them."""
    import re

    budget = re.compile(r"^(timeout|max_attempts|(voyage|cohere|gemini|mixedbread|openai)_(tpm|rpm|interval))$")
    seen = 0
    for path, command in leaf_commands():
        names = [p.name for p in command.params if p.name and budget.match(p.name)]
        if not names:
            continue
        lines = help_text(monkeypatch, capsys, *path)
        for name in names:
            flag = "--" + name.replace("_", "-")
            row = next(line for line in lines if line.startswith(flag + " "))
            assert re.search(r"\[default: \((none|[\d,.]+)\)\]$", row), (path, row)
            seen += 1
    assert seen >= 30


def test_a_missing_argument_with_choices_is_one_line(capsys):
    code = main(["mixedbread-upload", "-b", "sample"])
    line, err = one_error_line(capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert line.startswith("error: Missing argument 'content'. Choose from: markdown, images")


def test_missing_and_malformed_keys_are_named_together(no_keys, no_loading, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COHERE_API_KEY", "co-abc\tdef")
    method = "rrf:voyage-4-lite+cohere-embed-v4.0"
    code = main(["run", method, "-b", "sample", "--results-dir", str(tmp_path / "r"), "--cache-dir", "c"])
    line, err = one_error_line(capsys)
    assert code == 2 and line.startswith(
        "error: missing API key: VOYAGE_API_KEY is not set; "
        "malformed API key: COHERE_API_KEY holds whitespace (character 7 of 10): export VOYAGE_API_KEY=..."
    )
    assert "co-abc" not in err


def test_an_upload_plan_of_a_broken_folder_is_its_reason_once_exit_2(tmp_path, capsys, monkeypatch):
    """`mixedbread-upload --plan` refuses broken data as the upload does, not "its data is not here; download it"."""
    monkeypatch.delenv("MXBAI_API_KEY", raising=False)
    corpus, queries, qrels, reason = BROKEN["bad JSON"]
    folder = beir(tmp_path / "mine", corpus, queries, qrels)
    code = main(["mixedbread-upload", "markdown", "-b", str(folder), "--cache-dir", str(tmp_path / "c"), "--plan"])
    line, err = one_error_line(capsys)
    assert code == 2 and reason in line
    assert err.count(reason) == 1 and "download" not in err

"""What a new user meets on the command line: Ctrl-C, output paths, options given twice or out of range.

Each test goes through `evals_repro.cli.main` with the arguments a user types, and checks the exit code, the
one `error:` line (no traceback) and that nothing already written is lost.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from beir_folder import write_beir_folder
from evals_repro.cli import main
from fakes.voyage import FakeVoyage


def error_lines(capsys) -> list[str]:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("error: ")]


def two_subsets(tmp_path: Path) -> str:
    """A folder of two BEIR folders (one subset each) where BM25 ranks the judged page first."""
    root = tmp_path / "bench"
    for name, word in (("alpha", "solar"), ("beta", "wind")):
        write_beir_folder(
            root / name,
            {"d1": f"{word} power plants", "d2": "unrelated gardening notes"},
            {"q1": word},
            [("q1", "d1", 1)],
        )
    return str(root)


def run_args(tmp_path: Path, benchmark: str, *extra: str) -> list[str]:
    results, cache = str(tmp_path / "results"), str(tmp_path / "cache")
    return ["run", "bm25", "--benchmark", benchmark, "--results-dir", results, "--cache-dir", cache, *extra]


def test_ctrl_c_mid_run_says_so_keeps_finished_subsets_and_resume_skips_them(tmp_path, capsys, monkeypatch):
    from evals_repro.runner import evaluation

    bench = two_subsets(tmp_path)
    real_load = evaluation.load_subset
    loaded: list[str] = []

    def load_then_ctrl_c(decl, name, options):
        loaded.append(name)
        if len(loaded) == 2:
            raise KeyboardInterrupt  # what SIGINT raises in the main thread
        return real_load(decl, name, options)

    monkeypatch.setattr(evaluation, "load_subset", load_then_ctrl_c)
    code = main(run_args(tmp_path, bench))
    err = capsys.readouterr().err
    assert code == 130
    assert "Traceback" not in err
    interrupted = [line for line in err.splitlines() if line.startswith("interrupted: ")]
    assert len(interrupted) == 1 and "rerun" in interrupted[0] and "--resume" in interrupted[0]
    first = tmp_path / "results" / "bench" / "bm25" / f"{loaded[0]}.json"
    assert first.is_file()
    assert not (tmp_path / "results" / "bench" / "bm25" / f"{loaded[1]}.json").exists()

    monkeypatch.setattr(evaluation, "load_subset", real_load)
    assert main(run_args(tmp_path, bench, "--resume")) == 0
    err = capsys.readouterr().err
    assert f"{loaded[0]}: complete result kept" in err
    assert f"{loaded[1]}: 1 queries" in err


def sample_results(tmp_path: Path) -> str:
    """BM25 results for one subset of the bundled sample benchmark."""
    assert main(run_args(tmp_path, "sample", "--subsets", "heat-pumps")) == 0
    return str(tmp_path / "results")


def test_report_output_that_is_a_directory_is_one_usage_line_and_keeps_the_directory(tmp_path, capsys):
    results = sample_results(tmp_path)
    folder = tmp_path / "tables.md"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me\n")
    capsys.readouterr()
    code = main(["report", "-b", "sample", "--results-dir", results, "-o", str(folder)])
    lines = error_lines(capsys)
    assert code == 2 and len(lines) == 1
    assert f"--output {folder} is a directory" in lines[0]
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    assert (folder / "notes.txt").read_text() == "keep me\n"


def test_report_output_under_a_file_names_that_file(tmp_path, capsys):
    results = sample_results(tmp_path)
    blocker = tmp_path / "paper"
    blocker.write_text("draft\n")
    capsys.readouterr()
    code = main(["report", "-b", "sample", "--results-dir", results, "-o", str(blocker / "tables.csv")])
    lines = error_lines(capsys)
    assert code == 2 and len(lines) == 1
    assert "--output" in lines[0] and f"{blocker} is a file" in lines[0]
    assert blocker.read_text() == "draft\n"


def test_answer_report_output_that_is_a_directory_is_refused_first(tmp_path, capsys):
    folder = tmp_path / "answers.md"
    folder.mkdir()
    code = main(["answer-report", "--out-dir", str(tmp_path / "none"), "-o", str(folder)])
    lines = error_lines(capsys)
    assert code == 2 and len(lines) == 1 and f"--output {folder} is a directory" in lines[0]


def test_report_negative_decimals_is_a_usage_error(tmp_path, capsys):
    results = sample_results(tmp_path)
    capsys.readouterr()
    code = main(["report", "-b", "sample", "--results-dir", results, "--decimals", "-1"])
    lines = error_lines(capsys)
    assert code == 2 and len(lines) == 1 and "'--decimals'" in lines[0]


def test_report_takes_several_measures_like_every_list_option(tmp_path, capsys):
    """`-m map -m p_at_5` (and `-m map,p_at_5`) tables both; the last one alone used to win silently."""
    bench = two_subsets(tmp_path)
    assert main(run_args(tmp_path, bench)) == 0
    results = str(tmp_path / "results")
    for given in (["-m", "map", "-m", "p_at_5"], ["-m", "map,p_at_5"]):
        out = tmp_path / "tables.csv"
        capsys.readouterr()
        assert main(["report", "-b", bench, "--results-dir", results, *given, "-o", str(out)]) == 0
        rows = [line.split(",") for line in out.read_text().splitlines()]
        # each query's one judged page is ranked first: AP = 1; P@5 = 1/5
        assert rows[0] == ["table", "method", "alpha", "beta", "avg"]
        assert [r[0].split(" — ")[-1] for r in rows[1:]] == ["map (x100)", "p_at_5 (x100)"]
        assert [r[2:] for r in rows[1:]] == [["100.0", "100.0", "100.0"], ["20.0", "20.0", "20.0"]]


def test_report_by_with_several_measures_is_refused_in_one_line(tmp_path, capsys):
    bench = two_subsets(tmp_path)
    assert main(run_args(tmp_path, bench)) == 0
    capsys.readouterr()
    args = ["report", "-b", bench, "--results-dir", str(tmp_path / "results"), "--by", "query_type"]
    code = main([*args, "-m", "map", "-m", "p_at_5"])
    lines = error_lines(capsys)
    assert code == 2 and len(lines) == 1 and "--by breaks down one measure" in lines[0]


def test_beir_file_that_is_a_directory_names_it_without_errno_noise(tmp_path, capsys):
    bench = two_subsets(tmp_path)
    corpus = Path(bench) / "beta" / "corpus.jsonl"
    corpus.unlink()
    corpus.mkdir()
    code = main(run_args(tmp_path, bench))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 4 and len(lines) == 1 and lines[0].startswith("error: 1 of 2 subsets failed (beta): ")
    said = [line for line in err.splitlines() if line.startswith("beta: failed: ")]
    assert len(said) == 1 and f"{corpus}: cannot read the file (it is a directory)" in said[0]
    assert "Errno" not in err and "IsADirectoryError" not in err and "Traceback" not in err
    assert (tmp_path / "results" / "bench" / "bm25" / "alpha.json").is_file()  # the other subset is written


def test_revision_on_a_local_benchmark_is_refused_not_ignored(tmp_path, capsys):
    """`--revision` picks a Hub commit; on files on disk it used to be accepted and silently ignored."""
    code = main(run_args(tmp_path, "sample", "--subsets", "heat-pumps", "--revision", "abc123"))
    lines = error_lines(capsys)
    assert code == 2 and len(lines) == 1
    assert "--revision abc123 does not apply" in lines[0] and "drop --revision" in lines[0]
    assert not (tmp_path / "results" / "sample" / "bm25" / "heat-pumps.json").exists()


def test_spent_summary_shows_seconds_to_a_tenth(tmp_path, capsys):
    """A local reranker's call seconds used to print with Python's full float repr (242.10103580799998)."""
    bench = two_subsets(tmp_path)
    results, cache = str(tmp_path / "results"), str(tmp_path / "cache")
    code = main(["run", "bm25+minilm@2", "-b", bench, "--results-dir", results, "--cache-dir", cache])
    err = capsys.readouterr().err
    assert code == 0
    spent = next(line for line in err.splitlines() if "; spent: " in line).split("; spent: ")[1]
    items = dict(item.rsplit(" ", 1) for item in spent.split(", "))
    assert "minilm call seconds" in items
    for name, shown in items.items():
        whole, _, tenths = shown.replace(",", "").partition(".")
        assert whole.isdigit() and (tenths == "" or (len(tenths) == 1 and tenths.isdigit())), (name, shown)
        assert ("seconds" in name) == (tenths != ""), (name, shown)


@pytest.mark.parametrize(
    ("given", "named"),
    [(["--voyage-tpm", "-5"], "--voyage-tpm -5 is below 0"), (["--timeout", "0"], "--timeout 0.0 is below 0.001")],
)
def test_bad_provider_number_names_the_option_the_user_typed(tmp_path, capsys, monkeypatch, given, named):
    """It used to read `option voyage_tpm=-5 is below 0`: a name the user never typed."""
    with FakeVoyage() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        results, cache = str(tmp_path / "r"), str(tmp_path / "c")
        code = main(["run", "voyage-4-lite", "-b", "sample", "--results-dir", results, "--cache-dir", cache, *given])
        assert fake.requests == []
    lines = error_lines(capsys)
    assert code == 2 and len(lines) == 1 and named in lines[0]


def test_evaluate_result_given_another_file_never_advises_deleting_it(tmp_path, capsys):
    """A qrels file passed to --result by mistake used to be called a damaged result: `delete it and rerun`."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    code = main(["evaluate", "--result", str(qrels)])
    lines = error_lines(capsys)
    assert code == 2 and len(lines) == 1
    assert str(qrels) in lines[0] and "delete" not in lines[0] and "written by `evals-repro run`" in lines[0]
    assert qrels.read_text() == "q1 0 d1 1\n"


def test_report_csv_puts_every_value_under_its_own_column_when_tables_differ(tmp_path, capsys):
    """vidore-v3-rcp tables per domain (8 domains + mean) come before tables per subset (48 + avg); the CSV had
    one header, the first table's, so the subset rows' 49 values sat under 9 domain names and beyond."""
    import csv

    from evals_repro.benchmarks import get_benchmark
    from records import write_rcp_grid

    decl = get_benchmark("vidore-v3-rcp")
    domains, languages = list(decl.extra["native"]), list(decl.query_languages)
    write_rcp_grid(tmp_path, decl)
    out = tmp_path / "tables.csv"
    assert main(["report", "-b", "vidore-v3-rcp", "--results-dir", str(tmp_path), "-o", str(out)]) == 0
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert all(None not in row for row in rows)  # no value without a column name
    subset_rows = [row for row in rows if " — monolingual — " in row["table"]]
    assert len(subset_rows) == 1
    for d, domain in enumerate(domains):
        for i, lang in enumerate(languages):
            assert subset_rows[0][f"{domain}__{lang}"] == f"{(d / 10 + i / 100) * 100:.1f}"
    native = next(row for row in rows if "native-language view" in row["table"])
    for d, domain in enumerate(domains):
        i = languages.index(decl.extra["native"][domain])
        assert native[domain] == f"{(d / 10 + i / 100) * 100:.1f}"


@pytest.mark.parametrize(
    ("method", "named", "fix"),
    [
        ("bm25", "--rerank-depth 30 is the depth of --rerank, and no --rerank is given", "add --rerank NAME"),
        ("bm25+minilm@20", "--rerank-depth 30 conflicts with method 'bm25+minilm@20'", "(bm25+minilm@30)"),
    ],
)
def test_rerank_depth_that_would_be_ignored_is_refused(tmp_path, capsys, method, named, fix):
    """`run bm25+minilm@20 --rerank-depth 30` used to rerank 20 and `run bm25 --rerank-depth 30` none, silently."""
    args = ["run", method, "-b", "sample", "-s", "heat-pumps", "--rerank-depth", "30"]
    code = main([*args, "--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")])
    lines = error_lines(capsys)
    assert code == 2 and len(lines) == 1 and named in lines[0] and fix in lines[0]
    assert not (tmp_path / "r").exists()


def test_language_on_a_declared_benchmark_is_refused_not_ignored(tmp_path, capsys):
    """`--language` sets a BEIR folder's native language; on `sample` it was accepted and ignored."""
    code = main(run_args(tmp_path, "sample", "--subsets", "heat-pumps", "--language", "french"))
    lines = error_lines(capsys)
    assert code == 2 and len(lines) == 1
    assert "--language french applies to a BEIR folder" in lines[0] and "drop --language" in lines[0]
    assert not (tmp_path / "results" / "sample").exists()


def test_benchmark_path_that_is_missing_or_a_file_says_which(tmp_path, capsys):
    """A mistyped folder used to read `unknown benchmark 'runs/mine'`, as if it were a benchmark name."""
    missing = tmp_path / "mine"
    afile = tmp_path / "corpus.jsonl"
    afile.write_text('{"_id": "d1", "text": "x"}\n')
    for given, why in ((missing, "does not exist"), (afile, "is a file, not a folder")):
        code = main(run_args(tmp_path, str(given)))
        lines = error_lines(capsys)
        assert code == 2 and len(lines) == 1 and f"--benchmark {given} {why}" in lines[0]
    assert afile.read_text() == '{"_id": "d1", "text": "x"}\n'


def test_benchmarks_are_listed_by_name_with_the_default_marked(capsys):
    """File order listed vidore-v3 (the default) last, after vidore-v3-rcp-retrieval, and unmarked."""
    assert main(["benchmarks"]) == 0
    heads = [line.split("  ")[0] for line in capsys.readouterr().out.splitlines() if not line.startswith(" ")]
    assert heads == sorted(heads)
    assert heads.index("vidore-v3") < heads.index("vidore-v3-mteb") < heads.index("vidore-v3-rcp")
    assert main(["benchmarks"]) == 0
    assert "vidore-v3  (default)  [" in capsys.readouterr().out


def test_a_query_embedded_once_is_never_paid_again_across_settings(tmp_path, monkeypatch):
    """A crosslingual run embedded all languages as one list, so a monolingual run of the same subset (or a
    crosslingual one after it) paid again for the native queries: the cache found no list of theirs."""
    import json

    from evals_repro.benchmarks.registry import benchmarks_dir

    lines = (benchmarks_dir() / "sample" / "heat-pumps" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line) for line in lines if line.strip()]
    native = sorted(q["text"] for q in queries if q["language"] == "english")
    others = sorted(q["text"] for q in queries if q["language"] != "english")
    assert native and others
    with FakeVoyage() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")

        def run(cache: str, setting: str) -> list[str]:
            before = len(fake.requests)
            args = ["run", "voyage-4-lite", "-b", "sample", "-s", "heat-pumps", "--setting", setting]
            # Results apart per cache: a monolingual run over a crosslingual result would run crosslingually.
            results = str(tmp_path / f"r-{cache}-{setting}")
            assert main([*args, "--results-dir", results, "--cache-dir", str(tmp_path / cache)]) == 0
            return sorted(t for r in fake.requests[before:] for t in sent_query_texts_of(r))

        def sent_query_texts_of(request) -> list[str]:
            body = request.json
            return body["input"] if body.get("input_type") == "query" else []

        assert run("c1", "crosslingual") == sorted(native + others)
        assert run("c1", "monolingual") == []  # every native query was embedded by the crosslingual run
        assert run("c2", "monolingual") == native
        assert run("c2", "crosslingual") == others  # only the languages not embedded yet


def test_a_crosslingual_query_list_cached_whole_is_still_used(tmp_path, monkeypatch):
    """Caches written before queries were embedded per language hold one list of every language: a
    crosslingual run must still find it rather than pay for the queries again."""
    from evals_repro.base.context import MethodContext
    from evals_repro.base.rendering import ModelInput, query_text
    from evals_repro.benchmarks import get_benchmark, load_subset
    from evals_repro.retrieval.dense import build

    with FakeVoyage() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "test-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        subset = load_subset(get_benchmark("sample"), "heat-pumps")
        retriever = build("voyage-4-lite", MethodContext(benchmark="sample", cache_dir=tmp_path / "c"))
        retriever.cache.embed([ModelInput(text=query_text(q)) for q in subset.queries], "query")  # the old way
        before = len(fake.requests)
        args = ["run", "voyage-4-lite", "-b", "sample", "-s", "heat-pumps", "--setting", "crosslingual"]
        assert main([*args, "--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")]) == 0
        assert [r.json.get("input_type") for r in fake.requests[before:]] == ["document"]


@pytest.mark.parametrize(
    ("given", "named"),
    [(["--timeout", "-1"], "--timeout -1.0 is below 0.001"), (["--max-attempts", "0"], "--max-attempts 0 is below 1")],
)
def test_bad_provider_number_is_refused_even_for_an_offline_method(tmp_path, capsys, given, named):
    """`run bm25 --timeout -1` used to run and exit 0: the option was checked only by methods that call a provider."""
    code = main(run_args(tmp_path, "sample", "--subsets", "heat-pumps", *given))
    lines = error_lines(capsys)
    assert code == 2 and len(lines) == 1 and named in lines[0]
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("method", "given"),
    [("bm25", ["--rerank-top-k", "5"]), ("bm25", ["--store-prefix", "x"]), ("minilm", ["--rerank-top-k", "5"])],
)
def test_store_options_on_another_method_are_refused(tmp_path, capsys, method, given):
    """`run bm25 --rerank-top-k 5` ran, recorded rerank_top_k=5 in bm25's result, and so made the next
    `--resume` without it recompute ("its options differ")."""
    args = ["run", method, "-b", "sample", "-s", "heat-pumps", *given]
    code = main([*args, "--results-dir", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")])
    lines = error_lines(capsys)
    assert code == 2 and len(lines) == 1
    assert f"{given[0]} applies to " in lines[0] and "mixedbread-markdown+rerank" in lines[0]
    assert f"not to '{method}'" in lines[0]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (["-s", ""], "--subsets"),
        (["-s", " , "], "--subsets"),
        (["-m", ""], "--measure"),
    ],
)
def test_an_empty_list_value_is_refused_not_read_as_all(tmp_path, capsys, command, option):
    """`-s ''` (an unset shell variable) used to run every subset, `-m ''` the default measures."""
    bench = two_subsets(tmp_path)
    assert main(run_args(tmp_path, bench, *command)) == 2
    (line,) = error_lines(capsys)
    assert f"{option} was given no names" in line
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*.json"))


def test_report_with_an_empty_measure_is_refused(tmp_path, capsys):
    assert main(["report", "-b", "sample", "-m", "", "--results-dir", str(tmp_path / "r")]) == 2
    (line,) = error_lines(capsys)
    assert "--measure was given no names" in line


def test_a_monolingual_run_does_not_replace_a_crosslingual_result(tmp_path, capsys):
    """The crosslingual result holds the monolingual scores too: a plain rerun keeps it crosslingual (it used to
    write a monolingual record over it, emptying the crosslingual table's cell)."""
    import json

    args = ["run", "bm25", "-b", "sample", "-s", "heat-pumps", "--results-dir", str(tmp_path / "r")]
    args += ["--cache-dir", str(tmp_path / "c")]
    assert main([*args, "--setting", "crosslingual"]) == 0
    path = tmp_path / "r" / "sample" / "bm25" / "heat-pumps.json"
    before = json.loads(path.read_text())
    capsys.readouterr()
    assert main(args) == 0
    printed = capsys.readouterr()
    assert "holds a crosslingual result" in printed.out + printed.err
    after = json.loads(path.read_text())
    assert after["setting"] == "crosslingual"
    assert sorted(after["languages"]) == sorted(before["languages"]) and len(after["languages"]) == 4
    assert after["metrics"] == before["metrics"]

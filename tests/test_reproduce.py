"""`evals-repro reproduce` on a fixture release in the card's layout (rcp_fixture.card_release_files), against
figures computed by hand (reproduce_fixture), and the real declarations against ../shared/published."""

from __future__ import annotations

import csv
import json
import re
import shutil
from types import SimpleNamespace

import pytest

import rcp_fixture
import reproduce_fixture as RF
from conftest import shared_path
from evals_repro.cli import main
from evals_repro.reproduce import figures
from evals_repro.reproduce.figures import load_sources, table_id
from evals_repro.reproduce.rcp_claims import derived_figures

V1 = rcp_fixture.V1


@pytest.fixture(scope="module")
def card(tmp_path_factory):
    root = tmp_path_factory.mktemp("card")
    return SimpleNamespace(
        root=root,
        snapshot=rcp_fixture.write_card_snapshot(root / "release"),
        published=RF.write_card_figures(root / "published"),
    )


def _environment(mp, card) -> None:
    """The fixture's figures; no GPU, no replicas, a Cohere key only."""
    mp.setattr(figures, "PUBLISHED_DIR", card.published)
    mp.setattr("evals_repro.serving.reranker.visible_gpus", lambda: [])
    for name in ("ZERANK_RERANK_URLS", "QWEN_RERANK_URLS", "VOYAGE_API_KEY", "CO_API_URL"):
        mp.delenv(name, raising=False)
    mp.setenv("COHERE_API_KEY", "test-key")


@pytest.fixture
def fixture_env(card, monkeypatch):
    _environment(monkeypatch, card)
    return card


def matrix(args: list[str], out) -> dict:
    assert main([*args, "-o", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def ran(card):
    """`reproduce rcp-card --run` on the fixture: computed and stored; Cohere has a key but no --max-cost."""
    results = card.root / "results-a"
    with pytest.MonkeyPatch.context() as mp:
        _environment(mp, card)
        args = ["reproduce", "rcp-card", "--run", "--snapshot", str(card.snapshot), "--results-dir", str(results)]
        doc = matrix([*args, "--cache-dir", str(card.root / "cache")], card.root / "a.json")
    return SimpleNamespace(doc=doc, results=results, by_id={f["id"]: f for f in doc["figures"]})


def check_tables(by_id: dict) -> None:
    """Every replayed cell is the hand-computed one; the cell 0.06 off its print differs, the one 0.04 off does not."""
    oracle = RF.oracle_cells()
    for (view, metric, rule, name, column), expected in oracle.items():
        row = by_id[table_id(view, metric, rule, name, column)]
        assert row["here"] == pytest.approx(expected, abs=1e-9), row["id"]
        off = abs(expected - row["published"])
        assert row["status"] == ("reproduced" if off <= 0.05 else "differs"), row["id"]
    for rule in RF.RULES:
        hr = by_id[table_id("native", "rcp_ndcg_at_10", rule, "CTXL-RR-1B", "hr")]
        cs = by_id[table_id("native", "rcp_ndcg_at_10", rule, "CTXL-RR-1B", "computer_science")]
        assert (hr["published"], hr["here"], hr["status"]) == (100.0, pytest.approx(99.94), "differs")
        assert hr["detail"] == "by -0.060 %"
        assert (cs["published"], cs["here"], cs["status"]) == (100.0, pytest.approx(99.96), "reproduced")


def test_every_status_on_the_fixture_release(ran):
    check_tables(ran.by_id)
    statuses = {f["status"] for f in ran.doc["figures"]}
    assert statuses == {"reproduced", "differs", "not run", "cannot run here"}
    # 1008 cells (2 differ), 44 claims (6 cannot run here), 3 x 72 re-run cells (Cohere: paid, not run; Voyage: no
    # key; zerank-2: no GPU).
    assert ran.doc["line"] == "1044 of 1268 reproduced (2 differ, 72 not run, 150 cannot run here)"
    cohere = ran.by_id["rerun/pool+cohere/native/rcp_ndcg_at_10/doc-id/hr"]
    assert cohere["status"] == "not run"
    assert re.fullmatch(
        r"paid, \$[0-9.]+ by its plan: `evals-repro run pool\+cohere -b vidore-v3-rcp`; give --max-cost to run it here",
        cohere["detail"],
    )
    voyage = ran.by_id["rerun/pool+voyage/mean6/qrel_ndcg_at_10/group-mean/mean"]
    assert (voyage["status"], voyage["detail"]) == ("cannot run here", "needs VOYAGE_API_KEY (the key of a paid model)")
    zerank = ran.by_id["rerun/pool+zerank-2/native/rcp_ndcg_at_10/doc-id/hr"]
    assert zerank["status"] == "cannot run here" and "needs a GPU" in zerank["detail"]


def test_claims_are_computed_from_the_release(ran):
    expected = RF.CLAIMS | RF.derived_values(RF.oracle_cells())
    claims = [f for f in ran.doc["figures"] if f["section"] == "claims"]
    for row in claims:
        if row["id"].startswith("card.stage_a_windows"):
            assert row["status"] == "cannot run here" and "stage-A tournament windows" in row["detail"]
        elif row["id"] == "card.criteria_rows.fewer_than_release_1":
            assert row["detail"] == "needs release 1 from the Hub (a --snapshot holds one revision)"
        else:
            assert row["status"] == "reproduced", row
            assert row["published"] == expected[row["id"]]
    # Counts are exact: the computed value, not just one within tolerance.
    skip = {"card.criteria_rows.rows", "card.criteria_rows.fewer_than_release_1", "card.rrf_exact.max_score_diff"}
    exact = {r["id"]: r["here"] for r in claims if r["id"] in RF.CLAIMS and r["id"] not in skip}
    assert exact == {k: pytest.approx(v) for k, v in RF.CLAIMS.items() if k in exact}
    assert ran.by_id["card.rrf_exact.max_score_diff"]["here"] < 1e-12
    assert ran.by_id["card.criteria_rows.rows"]["here"] == 8 * rcp_fixture.CRITERIA_ROWS / 1e6


def test_a_later_call_reads_what_run_stored(ran, fixture_env, tmp_path):
    doc = matrix(["reproduce", "rcp-card", "--results-dir", str(ran.results)], tmp_path / "b.json")
    check_tables({f["id"]: f for f in doc["figures"]})  # no --snapshot: nothing is read from the release
    assert doc["line"] == ran.doc["line"]


def test_derived_claims_recount_the_printed_values():
    """Two rerankers, two domains: rule (a) and (b) printed (one decimal) differ in 3 of 6 cells, by 0.1 at most."""
    cells = {}
    table = {  # reranker, column: (a, b) in % for native RCP; mean6 = native + 1 (a) / native + 2 (b)
        ("A", "d1"): (85.24, 85.26),  # 85.2 vs 85.3: differs
        ("A", "d2"): (70.01, 70.04),  # 70.0 vs 70.0
        ("A", "mean"): (77.63, 77.65),  # 77.6 vs 77.7 (77.65 prints 77.7): differs
        ("B", "d1"): (50.0, 50.0),
        ("B", "d2"): (60.0, 60.1),  # differs
        ("B", "mean"): (55.0, 55.04),
    }
    for (name, column), (a, b) in table.items():
        for metric in ("rcp_ndcg_at_10", "qrel_ndcg_at_10"):
            cells[table_id("native", metric, "doc-id", name, column)] = a
            cells[table_id("native", metric, "group-mean", name, column)] = b
            cells[table_id("mean6", metric, "doc-id", name, column)] = a + 1
            cells[table_id("mean6", metric, "group-mean", name, column)] = b + 2
    out = derived_figures(cells, ["A", "B"], ["d1", "d2"])
    assert out["card.rule_a_vs_b_rcp.differ"] == 3 and out["card.rule_a_vs_b_rcp.printed"] == 6
    assert out["card.rule_a_vs_b_rcp.largest"] == pytest.approx(0.1)
    # 6-language minus native under rule (b): +2 in every domain cell.
    assert (out["card.mean6_vs_native_qrel.mean"], out["card.mean6_vs_native_qrel.lowest"]) == (2.0, 2.0)
    # |(a) - (b)| over domain cells: native 0.1 (B d2), 6-language 1.1 (B d2: 61.0 vs 62.1); means by hand.
    assert out["card.tie_rule_max.rcp_native_largest"] == pytest.approx(0.1)
    assert out["card.tie_rule_max.rcp_mean6_largest"] == pytest.approx(1.1)
    assert out["card.tie_rule_max.rcp_native_mean"] == pytest.approx((-0.02 - 0.03 + 0 - 0.1) / 4)
    del cells[table_id("native", "rcp_ndcg_at_10", "doc-id", "B", "mean")]
    assert "card.rule_a_vs_b_rcp.differ" not in derived_figures(cells, ["A", "B"], ["d1", "d2"])


@pytest.fixture(scope="module")
def paid(card, ran):
    """`--run --max-cost` with Cohere's key and a fake that ranks a, b, c in the gains' order: first under a ceiling
    below its plan (nothing sent), then under $1 (it runs)."""
    from fakes.rerankers import FakeCohereRerank

    results = card.root / "results-paid"
    shutil.copytree(ran.results, results)
    args = ["reproduce", "rcp-card", "--snapshot", str(card.snapshot), "--results-dir", str(results)]
    args += ["--cache-dir", str(card.root / "cache-paid"), "--run"]
    with FakeCohereRerank() as fake, pytest.MonkeyPatch.context() as mp:
        _environment(mp, card)
        mp.setenv("CO_API_URL", fake.url)
        low = matrix([*args, "--max-cost", "0.001"], card.root / "low.json")
        sent_low = len(fake.requests)
        doc = matrix([*args, "--max-cost", "1"], card.root / "paid.json")
        sent = len(fake.requests) - sent_low
    return SimpleNamespace(low=low, doc=doc, results=results, sent_low=sent_low, sent=sent)


def test_paid_reruns_under_max_cost(paid):
    """Every re-run cell is 100.0: the fake ranks each pool in its gains' order."""
    assert paid.sent_low == 0  # over the ceiling: nothing is sent
    detail = {f["id"]: f["detail"] for f in paid.low["figures"]}["rerun/pool+cohere/native/rcp_ndcg_at_10/doc-id/hr"]
    assert "over what --max-cost leaves ($0.001" in detail
    assert paid.sent == 48  # one rerank request per subset: one query each
    rows = [f for f in paid.doc["figures"] if f["id"].startswith("rerun/pool+cohere/")]
    assert len(rows) == 72
    for row in rows:
        assert row["here"] == pytest.approx(100.0, abs=1e-9)
        assert row["status"] == ("reproduced" if 100.0 - row["published"] <= 0.05 else "differs"), row["id"]
    assert (paid.results / "vidore-v3-rcp/pool+cohere/hr__english.json").is_file()


def test_report_published_rows_and_matrix(paid, fixture_env, tmp_path, capsys):
    common = ["report", "-b", "vidore-v3-rcp", "--results-dir", str(paid.results), "--measure", "ndcg_at_10"]
    capsys.readouterr()
    assert main([*common, "--published"]) == 0
    captured = capsys.readouterr()
    printed = RF.printed_cells()
    domains = [*RF.F.CARD_DOMAINS, "mean"]

    def row(view: str, metric: str, rule: str) -> str:
        return (
            "| RR4-Pro (published: rcp-card) | "
            + " | ".join(f"{printed[(view, metric, rule, 'RR4-Pro', c)]:.1f}" for c in domains)
            + " |"
        )

    # ndcg_float_at_10 under the report's rule (group-mean); ndcg_at_10 beside qrel-nDCG@10 under rule (a).
    native_float = captured.out.split("### vidore-v3-rcp — native-language view — ndcg_float_at_10")[1]
    assert row("native", "rcp_ndcg_at_10", "group-mean") in native_float.split("###")[0]  # never bold: a reference
    native_qrel = captured.out.split("### vidore-v3-rcp — native-language view — ndcg_at_10")[1].split("###")[0]
    assert row("native", "qrel_ndcg_at_10", "doc-id") in native_qrel
    assert "| pool+cohere | " + " | ".join(["100.0"] * 9) + " |" in native_qrel
    assert "rows marked (published: rcp-card)" in captured.err
    html = tmp_path / "r.html"
    assert main([*common, "--published", "-o", str(html)]) == 0  # the bundle path: rows added after its figures
    page = html.read_text()
    # The matrix beside it: RR4-Pro's 72 re-run cells are 100.0 (pool+cohere's results), so those printed 100.0 pass.
    at_100 = sum(1 for key, value in printed.items() if key[3] == "RR4-Pro" and value >= 99.95)
    line = f"{1044 + at_100} of 1268 reproduced ({2 + 72 - at_100} differ, 0 not run, 150 cannot run here)"
    assert "Published figures (evals-repro reproduce)" in page and f"<p>{line}</p>" in page
    assert "RR4-Pro (published: rcp-card)" in page


def test_results_of_another_revision_are_named_never_compared(ran, fixture_env, tmp_path, capsys):
    from records import write_record

    results = tmp_path / "results"
    shutil.copytree(ran.results, results)
    path = results / "vidore-v3-rcp" / "pool+cohere" / "hr__english.json"
    record = write_record(
        path,
        benchmark="vidore-v3-rcp",
        subset="hr__english",
        method="pool+cohere",
        languages={"english": {"ndcg_at_10": 0.5}},
        native_language="english",
    )
    record.model_copy(update={"source": {"repo": "fabianschmidt-cohere/rcp-ndcg-vidore-v3", "revision": V1}}).save(path)
    capsys.readouterr()
    assert main(["reproduce", "rcp-card", "--results-dir", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {path}: computed from data revision {V1}")
    assert "never compared" in err
    assert main(["report", "-b", "vidore-v3-rcp", "--results-dir", str(results), "--published"]) == 2
    assert f"{path}: computed from data revision {V1}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["reproduce", "nowhere"],
            "error: unknown source 'nowhere': choose from bm25s-beir, rcp-card, vidore-v3-paper",
        ),
        (["reproduce", "rcp-card", "-o", "m.xlsx"], "error: --output m.xlsx: unknown file type '.xlsx'"),
        (["reproduce", "rcp-card", "--max-cost", "5"], "error: --max-cost bounds what --run pays for: add --run"),
    ],
)
def test_bad_options_are_one_line(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_a_partial_snapshot_or_a_stored_file_of_another_revision_is_refused(ran, fixture_env, tmp_path, capsys):
    partial = tmp_path / "partial"
    shutil.copytree(fixture_env.snapshot, partial)
    (partial / "provenance/runs/hr.parquet").unlink()
    (partial / "physics__spanish/qrels.parquet").unlink()
    capsys.readouterr()
    assert main(["reproduce", "rcp-card", "--snapshot", str(partial), "--results-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {partial}: a partial release of fabianschmidt-cohere/rcp-ndcg-vidore-v3: 2 of the")
    assert err.count("\n") == 1 and "physics__spanish/qrels.parquet" in err
    results = tmp_path / "results"
    shutil.copytree(ran.results, results)
    stored = results / "reproduce" / "rcp-card.json"
    stored.write_text(stored.read_text().replace(rcp_fixture.V2, V1))
    assert main(["reproduce", "rcp-card", "--results-dir", str(results)]) == 2
    err = capsys.readouterr().err
    assert f"computed from data revision {V1}, not the rcp-card figures' {rcp_fixture.V2}" in err


def test_matrix_files(ran, fixture_env, tmp_path):
    base = ["reproduce", "rcp-card", "--results-dir", str(ran.results)]
    for suffix in (".csv", ".html", ".md"):
        assert main([*base, "-o", str(tmp_path / f"m{suffix}")]) == 0
    with (tmp_path / "m.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 1268 and {r["status"] for r in rows} >= {"reproduced", "differs", "cannot run here"}
    cell = next(r for r in rows if r["id"] == table_id("native", "rcp_ndcg_at_10", "doc-id", "CTXL-RR-1B", "hr"))
    assert (cell["printed"], cell["status"], cell["command"]) == ("100.0", "differs", "evals-repro rcp replay")
    page = (tmp_path / "m.html").read_text()
    assert "Content-Security-Policy" in page and "1044 of 1268 reproduced" in page and "<table>" in page
    text = (tmp_path / "m.md").read_text()
    assert text.rstrip().endswith("1044 of 1268 reproduced (2 differ, 72 not run, 150 cannot run here)")
    assert "| CTXL-RR-1B, hr | 100.0 % | 99.940 | -0.060 | differs | by -0.060 % |" in text


# -- the real declarations ---------------------------------------------------------------------------------------


def test_every_transcribed_figure_equals_the_shared_copy():
    """The project's own copy of the published figures is the one ../shared/published holds."""
    tables = shared_path("published", "rcp-ndcg-vidore-v3-card-tables.tsv")
    claims = shared_path("published", "claims.tsv")
    with tables.open(newline="") as handle:
        shared = {
            table_id(r["view"], r["metric"], r["tie_rule"], r["reranker"], r["domain"]): float(r["value_percent"])
            for r in csv.DictReader(handle, delimiter="\t")
        }
    real = {s.name: s for s in load_sources()}
    card = {f.id: f.value for f in real["rcp-card"].figures if f.route == "replay"}
    assert card == shared and len(card) == 1008
    with claims.open(newline="") as handle:
        rows = {r["id"]: r for r in csv.DictReader(handle, delimiter="\t")}
    declared: dict[str, list] = {}
    for source in real.values():
        for fig in source.figures:
            if fig.section == "claims":
                declared.setdefault(fig.id.rsplit(".", 1)[0], []).append(fig)
    assert set(declared) == set(rows)
    # A number of the text: not inside a name (3B, NDCG@10, 6-language), sign kept (-8.2, +2.6).
    number = re.compile(r"(?<![\w.@])[-+]?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.]|-[a-z])")
    for claim, figs in declared.items():
        printed = [float(n) for n in number.findall(rows[claim]["figure"].replace("14.5M", "14.5"))]
        stated = [float(n) for n in number.findall(rows[claim]["statement"])]
        ours = []
        for fig in figs:
            if not fig.implied:
                assert fig.value in (stated if fig.from_statement else printed), (claim, fig.id, fig.value)
                ours += [] if fig.from_statement else [fig.value, *([fig.high] if fig.high is not None else [])]
        assert sorted(ours) == sorted(printed), claim  # every printed number is declared, none twice


def test_the_paper_figures_say_what_they_need(tmp_path):
    doc = matrix(["reproduce", "vidore-v3-paper", "--results-dir", str(tmp_path)], tmp_path / "p.json")
    assert {f["status"] for f in doc["figures"]} == {"cannot run here"}
    human = next(f for f in doc["figures"] if f["id"] == "paper.grounding_human_f1.f1")
    assert human["detail"].startswith("needs the paper's 2 private datasets (its figure pools 10; 8 are public)")
    assert "`evals-repro grounding agreement`" in human["detail"]
    assert doc["line"] == "0 of 17 reproduced (0 differ, 0 not run, 17 cannot run here)"


def test_an_anchor_of_other_settings_is_a_reference_never_counted(tmp_path, capsys):
    from records import write_record

    write_record(
        tmp_path / "text" / "bm25" / "scifact.json",
        benchmark="text",
        subset="scifact",
        method="bm25",
        languages={"english": {"ndcg_at_10": 0.6543}},
        native_language="english",
    )
    doc = matrix(["reproduce", "bm25s-beir", "--results-dir", str(tmp_path)], tmp_path / "b.json")
    scifact = next(f for f in doc["figures"] if f["id"] == "text/bm25/scifact/ndcg_at_10")
    assert (scifact["published"], scifact["here"], scifact["status"]) == (68.7, pytest.approx(65.43), "reference")
    assert "bm25s removes English stopwords" in scifact["detail"]
    assert (
        doc["line"]
        == "0 of 0 reproduced (0 differ, 0 not run, 0 cannot run here); 5 reference figures shown, not checked"
    )
    capsys.readouterr()
    assert main(["report", "-b", "text", "--results-dir", str(tmp_path), "--published"]) == 0
    out = capsys.readouterr().out.split("### text — monolingual — ndcg_at_10 (x100)")[1]
    # columns fiqa, trec-covid, hotpotqa, nq, scifact, dl19, dl20, avg: bm25s's five, nothing for DL nor the average
    assert "| bm25s-beir (published, reference: other settings) | 25.1 | 62.3 | 56.9 | 28.5 | 68.7 |  |  |  |" in out
    assert "| bm25 |  |  |  |  | 65.4 |  |  |  |" in out


def test_the_paper_figures_quoted_by_the_grounding_commands_are_the_declared_ones():
    """`grounding agreement` and `grounding predict` print the paper's figures beside theirs: the same values."""
    from evals_repro.vidore_paper import agreement, grounding

    paper = {f.id: f.value for f in load_sources(["vidore-v3-paper"])[0].figures}
    assert grounding.PUBLISHED["human_f1"] == paper["paper.grounding_human_f1.f1"]
    assert grounding.PUBLISHED["models"] == {
        "Qwen3-VL": paper["paper.grounding_qwen3vl_f1.f1"],
        "Gemini 3 Pro": paper["paper.grounding_gemini_f1.f1"],
    }
    assert agreement.PUBLISHED_F1 == round(paper["paper.grounding_human_f1.f1"], 2)

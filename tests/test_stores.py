"""Mixedbread stores through the real SDK against a stateful fake: upload, resume, failures, search."""

from __future__ import annotations

import io
from collections import Counter

import pytest

from beir_folder import write_beir_folder
from evals_repro.base.data import Page, Query, Subset
from evals_repro.base.errors import ConfigurationError
from evals_repro.base.usage import Usage
from evals_repro.methods.pipeline import PipelineSpec
from evals_repro.metrics.ranking import trec_ranked as ranked
from evals_repro.retrieval.base import MethodContext
from evals_repro.stores.common import store_name, upload_command
from evals_repro.stores.search import StoreRetriever, best_chunk_per_page
from evals_repro.stores.upload import StoreUploader
from fakes.mixedbread_store import FakeMixedbreadStores
from fakes.rerankers import count_requests, relevance

PAGES = [
    Page("p1", "solar panels on roofs\n\nthe inverter converts current"),
    Page("p2", "wind turbines at sea"),
    Page("p3", "battery storage for the grid\n\nsolar and wind together"),
    Page("p4", "hydro power in the mountains"),
    Page("p5", "   "),  # no markdown: never uploaded, never expected
    Page("p6", "nuclear plants and their waste"),
    Page("p/7", "geothermal heat from below"),
]
QUERIES = [
    Query("q1", "solar panels inverter", "english"),
    Query("q2", "wind at sea", "english"),
    Query("q3", "grid battery", "english"),
]
SUBSET = Subset("toy", "energy", "english", PAGES, QUERIES, {"q1": {"p1": 1}, "q2": {"p2": 1}, "q3": {"p3": 1}})
UPLOADABLE = [p.id for p in PAGES if p.text.strip()]


@pytest.fixture
def fake(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the default --cache-dir (store-search journals, upload journals) is ./cache
    with FakeMixedbreadStores(polls_to_complete=2, page_size_cap=2) as server:  # 2 per list page: pagination
        monkeypatch.setenv("MIXEDBREAD_BASE_URL", server.url)
        monkeypatch.setenv("MXBAI_API_KEY", "test-key")
        yield server


def _client():
    from evals_repro.providers.clients import mixedbread_client
    from evals_repro.providers.settings import provider_settings

    settings = provider_settings("mixedbread", {"timeout": 5, "max_attempts": 3})
    return mixedbread_client(settings), settings


def _uploader(content="markdown", workers=2, **kwargs):
    client, settings = _client()
    return StoreUploader(
        client,
        settings,
        Usage(),
        "toy",
        content,
        "toy-eval",
        workers=workers,
        poll_interval=0.01,
        poll_timeout=kwargs.pop("poll_timeout", 5.0),
        **kwargs,
    )


def _ctx(**options):
    return MethodContext(benchmark="toy", options={"timeout": 5, "max_attempts": 3, **options})


def test_store_names_use_valid_characters_only():
    assert store_name("ViDoRe_v3-eval", "Finance EN/2", "markdown") == "vidore-v3-eval-finance-en-2-markdown"
    assert (
        upload_command("toy", "energy", "images", "toy-eval")
        == "evals-repro mixedbread-upload images --benchmark toy --subsets energy"
    )
    assert upload_command("toy", "energy", "markdown", "mine").endswith("--store-prefix mine")


def test_full_upload_then_rerun_skips_everything(fake):
    summary = _uploader().run(SUBSET)
    assert (summary.uploaded, summary.skipped, summary.no_content, summary.failed) == (6, 0, 1, {})
    files = fake.store_files("toy-eval-energy-markdown")
    assert sorted(f["external_id"] for f in files) == sorted(UPLOADABLE)
    assert all(f["status"] == "completed" and f["config"] == {"parsing_strategy": "fast"} for f in files)
    by_id = {f["external_id"]: f for f in files}
    assert by_id["p/7"]["metadata"]["page_id"] == "p/7" and by_id["p/7"]["filename"] == "p_7.md"
    assert by_id["p1"]["data"] == PAGES[0].text.encode()
    # Processing is awaited through the listing (2 files a page here), never one GET per file.
    assert not [r for r in fake.requests if r.method == "GET" and "/files/" in r.path]
    uploads_before = count_requests(fake, "POST", "/v1/files")
    lists_before = sum(r.path.endswith("/files/list") for r in fake.requests)

    again = _uploader().run(SUBSET)
    assert (again.uploaded, again.skipped, again.failed) == (0, 6, {})
    assert count_requests(fake, "POST", "/v1/files") == uploads_before  # nothing paid twice
    # 6 store files at the fake's 2 per page: the resume listing followed 3 pages.
    assert sum(r.path.endswith("/files/list") for r in fake.requests) - lists_before == 3


def test_changed_page_is_uploaded_again_in_place(fake):
    _uploader().run(SUBSET)
    changed = [Page(p.id, p.text + " (revised)") if p.id == "p4" else p for p in PAGES]
    summary = _uploader().run(Subset("toy", "energy", "english", changed, QUERIES, {}))
    assert (summary.uploaded, summary.skipped) == (1, 5)
    p4 = [f for f in fake.store_files("toy-eval-energy-markdown") if f["external_id"] == "p4"]
    assert len(p4) == 1 and p4[0]["data"].endswith(b"(revised)")


@pytest.mark.parametrize("crash_after", [1, 3])
def test_crash_part_way_then_resume_uploads_only_the_rest(fake, crash_after):
    uploader = _uploader(workers=1)
    attach = uploader.client.stores.files.create
    calls = Counter()

    def attach_then_crash(*args, **kwargs):
        result = attach(*args, **kwargs)  # the store has the page; the process dies before polling it
        calls["attached"] += 1
        if calls["attached"] == crash_after:
            raise KeyboardInterrupt
        return result

    uploader.client.stores.files.create = attach_then_crash
    with pytest.raises(KeyboardInterrupt):
        uploader.run(SUBSET)
    after_crash = {f["external_id"]: f["status"] for f in fake.store_files("toy-eval-energy-markdown")}
    uploads_at_crash = count_requests(fake, "POST", "/v1/files")
    assert crash_after <= len(after_crash) < len(UPLOADABLE)
    assert set(after_crash.values()) == {"pending"}  # attached, processing never awaited

    resumed = _uploader(workers=2).run(SUBSET)
    # Only pages absent from the store are uploaded; attached-but-unfinished pages are only awaited.
    assert count_requests(fake, "POST", "/v1/files") - uploads_at_crash == len(UPLOADABLE) - len(after_crash)
    completed = sum(status == "completed" for status in after_crash.values())
    # Pages the crashed run sent are not counted as uploaded by the resume: only waited for.
    assert (resumed.skipped, resumed.finished, resumed.uploaded, resumed.failed) == (
        completed,
        len(after_crash) - completed,
        len(UPLOADABLE) - len(after_crash),
        {},
    )
    assert f"{len(after_crash) - completed} finished processing (sent by an earlier run)" in resumed.line()
    ids = [f["external_id"] for f in fake.store_files("toy-eval-energy-markdown")]
    assert sorted(ids) == sorted(UPLOADABLE)  # no duplicates
    assert all(f["status"] == "completed" for f in fake.store_files("toy-eval-energy-markdown"))


def test_failed_page_is_reported_blocks_search_and_is_retried_on_rerun(fake):
    fake.fail_external_ids = {"p2"}
    summary = _uploader().run(SUBSET)
    assert summary.failed == {"p2": "failed: could not parse file"} and summary.uploaded == 5
    retriever = StoreRetriever("mixedbread-markdown", _ctx(), "markdown", rerank=False, client=_client()[0])
    with pytest.raises(ConfigurationError) as info:
        retriever.run(SUBSET, QUERIES, top_k=10)
    line = info.value.one_line()
    assert "1 pages failed processing (first: p2)" in line
    assert "evals-repro mixedbread-upload markdown --benchmark toy --subsets energy" in line

    fake.fail_external_ids = set()
    again = _uploader().run(SUBSET)
    assert (again.uploaded, again.skipped, again.failed) == (1, 5, {})
    assert [f["external_id"] for f in fake.store_files("toy-eval-energy-markdown")].count("p2") == 1


def test_processing_timeout_is_a_failed_page_not_a_hang(fake):
    fake.polls_to_complete = 10_000
    summary = _uploader(poll_timeout=0.05).run(SUBSET)
    assert len(summary.failed) == 6
    assert all("rerun the upload to keep waiting" in reason for reason in summary.failed.values())


def test_search_maps_chunks_to_pages_by_best_chunk(fake):
    _uploader().run(SUBSET)
    retriever = PipelineSpec.parse("mixedbread-markdown").build(_ctx())
    run = retriever.run(SUBSET, QUERIES, top_k=10)
    for query in QUERIES:
        expected = {}
        for page in PAGES:
            if not page.text.strip():
                continue
            chunks = [c for c in page.text.split("\n\n") if c.strip()]
            expected[page.id] = max(relevance(query.text, c) for c in chunks)
        assert run[query.id] == pytest.approx(expected)
    assert ranked(run["q1"])[0][0] == "p1"
    body = [r for r in fake.requests if r.path == "/v1/stores/search"][0].json
    assert body["search_options"] == {"return_metadata": True, "rerank": False} and body["top_k"] == 10
    assert retriever.describe()["stores"] == {"energy": "toy-eval-energy-markdown"}
    assert retriever.meaningful_depth is None


def test_store_rerank_sends_the_reranker_and_cuts_to_rerank_top_k(fake):
    _uploader().run(SUBSET)
    retriever = PipelineSpec.parse("mixedbread-markdown+rerank").build(_ctx(rerank_top_k=2))
    run = retriever.run(SUBSET, QUERIES, top_k=10)
    assert all(len(scores) <= 2 for scores in run.values())
    assert fake.rerank_calls[0] == {"model": "mixedbread-ai/mxbai-rerank-large-v2", "top_k": 2, "with_metadata": False}
    assert retriever.meaningful_depth == 2


def test_missing_store_names_the_upload_command(fake):
    retriever = PipelineSpec.parse("mixedbread-markdown").build(_ctx(store_prefix="other"))
    with pytest.raises(ConfigurationError) as info:
        retriever.run(SUBSET, QUERIES, top_k=10)
    assert info.value.one_line() == (
        "store other-energy-markdown for toy/energy does not exist: upload it first: "
        "evals-repro mixedbread-upload markdown --benchmark toy --subsets energy --store-prefix other"
    )


def test_incomplete_store_stops_the_run(fake):
    half = Subset("toy", "energy", "english", PAGES[:3], QUERIES, {})
    _uploader().run(half)
    retriever = PipelineSpec.parse("mixedbread-markdown").build(_ctx())
    with pytest.raises(ConfigurationError) as info:
        retriever.run(SUBSET, QUERIES, top_k=10)
    assert "incomplete: 3 of 6 pages ready (first missing: p4, p6, p/7)" in info.value.one_line()


def test_expired_store_is_one_line(fake):
    _uploader().run(SUBSET)
    next(iter(fake.stores.values()))["status"] = "expired"
    with pytest.raises(ConfigurationError) as info:
        PipelineSpec.parse("mixedbread-markdown").build(_ctx()).run(SUBSET, QUERIES, top_k=10)
    assert "store toy-eval-energy-markdown has expired" in info.value.one_line()


def _png(color: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), (color, 0, 0)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_images_upload_with_titles_and_search(fake):
    pages = [
        Page("a", "", image=_png(10), title="Solar farm"),
        Page("b", "", image=_png(20), title="Wind park"),
        Page("c", "text only, no image"),
    ]
    subset = Subset("toy", "pics", "english", pages, [Query("q", "wind park", "english")], {"q": {"b": 1}})
    summary = _uploader("images").run(subset)
    assert (summary.uploaded, summary.no_content) == (2, 1)
    files = {f["external_id"]: f for f in fake.store_files("toy-eval-pics-images")}
    assert files["a"]["mime_type"] == "image/png" and files["a"]["metadata"]["title"] == "Solar farm"
    assert files["b"]["data"] == pages[1].image
    retriever = PipelineSpec.parse("mixedbread-images+rerank", "images").build(
        MethodContext("toy", content="images", options={"timeout": 5})
    )
    run = retriever.run(subset, subset.queries, top_k=5)
    assert ranked(run["q"])[0][0] == "b"
    assert fake.rerank_calls[-1]["with_metadata"] == ["title"]


def test_best_chunk_falls_back_to_file_ids():
    class Chunk:
        def __init__(self, file_id, score, external_id=None):
            self.file_id, self.score, self.external_id, self.metadata = file_id, score, external_id, {}

    chunks = [Chunk("f1", 0.2), Chunk("f1", 0.9), Chunk("f2", 0.5, "x"), Chunk("f9", 1.0)]
    assert best_chunk_per_page(chunks, {"f1": "p1"}) == {"p1": 0.9, "x": 0.5}


def test_cli_upload_prints_the_summary_and_fails_on_a_failed_page(fake, tmp_path, capsys):
    from evals_repro.cli import main

    folder = write_beir_folder(tmp_path / "mini", {p.id: p.text for p in PAGES[:4]}, {"q1": "solar"}, [("q1", "p1", 1)])
    fake.fail_external_ids = {"p3"}
    code = main(
        ["mixedbread-upload", "markdown", "--benchmark", folder, "--workers", "2", "--cache-dir", str(tmp_path / "c")]
    )
    out, err = capsys.readouterr()
    assert code != 0
    assert "store mini-eval-mini-markdown: 4 pages, 3 uploaded, 0 already present, 1 failed" in out
    assert "failed p3: failed: could not parse file" in out
    assert err.startswith("error: 1 pages failed to upload")


def test_cli_missing_key_is_one_line(monkeypatch, tmp_path, capsys):
    from evals_repro.cli import main

    monkeypatch.delenv("MXBAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    folder = write_beir_folder(tmp_path / "mini", {"p1": "x"}, {"q1": "x"}, [("q1", "p1", 1)])
    assert main(["mixedbread-upload", "markdown", "--benchmark", folder, "--subsets", "mini"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: missing API key: MXBAI_API_KEY is not set")


def _uploads_of(fake, data: bytes) -> int:
    """How many times these bytes were sent to the Files API (the fake records every request)."""
    return sum(1 for r in fake.requests if r.method == "POST" and r.path == "/v1/files" and data in r.body)


def _crash_on(uploader, target: str, nth: int, before: bool):
    """Make the nth call of client.<target> raise KeyboardInterrupt, before or after really calling it."""
    owner_path, _, name = target.rpartition(".")
    owner = uploader.client
    for part in owner_path.split(".") if owner_path else []:
        owner = getattr(owner, part)
    real = getattr(owner, name)
    calls = Counter()

    def crashing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == nth and before:
            raise KeyboardInterrupt
        result = real(*args, **kwargs)
        if calls["n"] == nth:
            raise KeyboardInterrupt
        return result

    setattr(owner, name, crashing)


def test_upload_killed_before_attach_is_attached_on_resume(fake, tmp_path):
    uploader = _uploader(workers=1, journal_dir=tmp_path / "journal")
    _crash_on(uploader, "stores.files.create", 3, before=True)  # 3rd page uploaded, never attached
    with pytest.raises(KeyboardInterrupt):
        uploader.run(SUBSET)
    assert len(fake.unattached()) == 1
    resumed = _uploader(journal_dir=tmp_path / "journal").run(SUBSET)
    assert fake.unattached() == []
    assert resumed.resumed == 1 and resumed.orphans_deleted == 0 and resumed.failed == {}
    assert "1 attached from an interrupted upload" in resumed.line()
    for page in PAGES:
        if page.text.strip():
            assert _uploads_of(fake, page.text.encode()) == 1, page.id  # nothing paid twice
    assert sorted(f["external_id"] for f in fake.store_files("toy-eval-energy-markdown")) == sorted(UPLOADABLE)
    assert not (tmp_path / "journal" / "toy-eval-energy-markdown.jsonl").exists()  # nothing outstanding


def test_orphan_no_page_needs_is_deleted_on_resume(fake, tmp_path):
    uploader = _uploader(workers=1, journal_dir=tmp_path / "journal")
    _crash_on(uploader, "stores.files.create", 2, before=True)
    with pytest.raises(KeyboardInterrupt):
        uploader.run(SUBSET)
    orphan = fake.unattached()
    assert len(orphan) == 1
    orphan_page = next(p for p in PAGES if p.text.encode() == fake.files[orphan[0]]["data"])
    changed = [Page(p.id, p.text + " (revised)") if p.id == orphan_page.id else p for p in PAGES]
    resumed = _uploader(journal_dir=tmp_path / "journal").run(Subset("toy", "energy", "english", changed, QUERIES, {}))
    assert resumed.orphans_deleted == 1 and resumed.resumed == 0 and orphan[0] not in fake.files
    assert fake.unattached() == [] and "1 unattached upload(s) of an interrupted run deleted" in resumed.line()


def test_upload_killed_in_flight_is_found_and_attached(fake, tmp_path):
    uploader = _uploader(workers=1, journal_dir=tmp_path / "journal")
    _crash_on(uploader, "files.create", 2, before=False)  # the server kept it; the answer never got back
    with pytest.raises(KeyboardInterrupt):
        uploader.run(SUBSET)
    assert len(fake.unattached()) == 1
    resumed = _uploader(journal_dir=tmp_path / "journal").run(SUBSET)
    assert fake.unattached() == [] and resumed.resumed == 1
    for page in PAGES:
        if page.text.strip():
            assert _uploads_of(fake, page.text.encode()) == 1, page.id
    assert count_requests(fake, "GET", "/v1/files?") >= 1  # looked up by name, then compared byte for byte


def test_cli_summary_does_not_count_pages_it_only_waited_for(fake, tmp_path, capsys):
    from evals_repro.cli import main

    pages = {p.id: p.text for p in PAGES[:4]}
    folder = write_beir_folder(tmp_path / "mini", pages, {"q1": "solar"}, [("q1", "p1", 1)])
    client, settings = _client()
    crashed = StoreUploader(client, settings, Usage(), "mini", "markdown", "mini-eval", workers=1, poll_interval=0.01)
    _crash_on(crashed, "stores.files.create", 2, before=False)  # two pages attached, never awaited
    subset = Subset("mini", "mini", "english", [Page(k, v) for k, v in pages.items()], [], {})
    with pytest.raises(KeyboardInterrupt):
        crashed.run(subset)
    # The pool may finish the pages it had started (under load, every one): the summary must count each as sent.
    sent = len(fake.store_files("mini-eval-mini-markdown"))
    assert 2 <= sent <= 4 and {f["status"] for f in fake.store_files("mini-eval-mini-markdown")} == {"pending"}
    code = main(["mixedbread-upload", "markdown", "--benchmark", folder, "--cache-dir", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert code == 0
    assert f"store mini-eval-mini-markdown: 4 pages, {4 - sent} uploaded, 0 already present, 0 failed, " in out
    assert f"{sent} finished processing (sent by an earlier run)" in out

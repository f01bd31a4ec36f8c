"""A SIGKILL inside an embedding call that spans several requests: the resume re-sends none that completed.

The child process embeds 48 items in 6 requests of 8 on 4 threads (real voyageai client, fake server).
The fake never answers the second request to arrive; once the other five are answered (and given time
to reach the cache), the child is killed. The resume must send exactly the unanswered request's items.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from evals_repro.embedders.base import EmbedItem
from evals_repro.embedders.cache import EmbeddingCache
from evals_repro.embedders.registry import build_embedder
from evals_repro.retrieval.base import MethodContext
from fakes.base import Reply, Request, bag_of_words
from fakes.voyage import FakeVoyage

TEXTS = [f"item {i} talks about topic{i % 5} and subject{i % 3}" for i in range(48)]

CHILD = """
import sys
from dataclasses import replace
from pathlib import Path
from evals_repro.embedders.base import EmbedItem
from evals_repro.embedders.cache import EmbeddingCache
from evals_repro.embedders.registry import build_embedder
from evals_repro.retrieval.base import MethodContext

texts = [f"item {i} talks about topic{i % 5} and subject{i % 3}" for i in range(48)]
ctx = MethodContext(benchmark="kill", options={"workers": 4, "timeout": 60})
embedder = build_embedder("voyage-4-lite", ctx)
embedder.settings = replace(embedder.settings, max_batch_items=8)
cache = EmbeddingCache.for_method(Path(sys.argv[1]), "kill", "voyage-4-lite", embedder, call_size=1024)
cache.embed([EmbedItem(text=t) for t in texts], "document")
print("finished")
"""


class HangOnSecond(FakeVoyage):
    """Answers every request but the second to arrive, which it holds until the test ends."""

    def __init__(self) -> None:
        super().__init__()
        self.answered: list[tuple[float, list[str]]] = []
        self.release = threading.Event()
        self.arrivals = 0

    def before(self, request: Request) -> Reply | None:
        with self._lock:
            self.arrivals += 1
            hang = self.arrivals == 2
        if hang:
            self.release.wait(60)
            return self.error_reply(503, "released")
        return None

    def dispatch(self, request: Request) -> Reply:
        reply = super().dispatch(request)
        if reply.status == 200:
            with self._lock:
                self.answered.append((time.monotonic(), list(request.json["input"])))
        return reply


def held_rows(folder: Path) -> int:
    """Rows of TEXTS the cache in `folder` holds (a plan's count: it reads only)."""
    from evals_repro.providers.plan import Plan

    ctx = MethodContext(benchmark="kill", options={"workers": 4, "timeout": 60})
    embedder = build_embedder("voyage-4-lite", ctx)
    cache = EmbeddingCache.for_method(folder, "kill", "voyage-4-lite", embedder, ctx.usage, call_size=1024)
    planned = Plan()
    cache.plan([EmbedItem(text=t) for t in TEXTS], "document", planned)
    return sum(line.held for line in planned.lines.values())


def test_kill_inside_multi_request_call_resends_no_completed_request(tmp_path, monkeypatch):
    with HangOnSecond() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "kill-test-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        env = dict(
            os.environ,
            VOYAGE_API_KEY="kill-test-key",
            VOYAGE_BASE_URL=fake.url + "/v1",
            PYTHONPATH=str(Path(__file__).parent),
            EVALS_REPRO_NO_PROGRESS="1",
        )
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(tmp_path / "cache")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 60
            while len(fake.answered) < 5 and time.monotonic() < deadline and child.poll() is None:
                time.sleep(0.02)
            assert len(fake.answered) == 5, child.stderr.read().decode() if child.poll() is not None else "timeout"
            # Killed once the five answers are in the child's cache (what a plan reads, touching nothing), not
            # after a fixed pause: a loaded machine may take any time to write them.
            deadline = time.monotonic() + 60
            while held_rows(tmp_path / "cache") < 40 and time.monotonic() < deadline and child.poll() is None:
                time.sleep(0.02)
            assert held_rows(tmp_path / "cache") == 40, "the answered rows never reached the child's cache"
            child.send_signal(signal.SIGKILL)
            child.wait()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            fake.release.set()
        completed = {text for _, batch in fake.answered for text in batch}
        assert len(completed) == 40
        hung = [text for text in TEXTS if text not in completed]
        assert len(hung) == 8
        sent_before = len(fake.requests)

        fake.arrivals = 100  # nothing hangs any more
        ctx = MethodContext(benchmark="kill", options={"workers": 4, "timeout": 60})
        embedder = build_embedder("voyage-4-lite", ctx)
        cache = EmbeddingCache.for_method(
            tmp_path / "cache", "kill", "voyage-4-lite", embedder, ctx.usage, call_size=1024
        )
        # the plan of the resume (issue 21) holds the 40 paid rows and sends the 8 others, in one request
        from evals_repro.providers.plan import Plan

        planned = Plan()
        cache.plan([EmbedItem(text=t) for t in TEXTS], "document", planned)
        assert [(li.requests, li.items, li.held) for li in planned.lines.values()] == [(1, 8, 40)]
        matrix = cache.embed([EmbedItem(text=t) for t in TEXTS], "document")
        resent = [text for r in fake.requests[sent_before:] for text in r.json["input"]]
        assert sorted(resent) == sorted(hung)  # only the request that never completed
        np.testing.assert_allclose(matrix, np.vstack([bag_of_words(t) for t in TEXTS]), atol=1e-6)
        usage = ctx.usage.as_dict()
        assert usage["cache_resumed"] == 40 and usage["embedded_items"] == 8
        assert not list((tmp_path / "cache").rglob("partial/*/*.emb"))  # folded into chunks, then removed
        again = len(fake.requests)
        cache.embed([EmbedItem(text=t) for t in TEXTS], "document")
        assert len(fake.requests) == again


def test_a_plan_leaves_a_damaged_partial_file_where_it_is_and_the_run_sets_it_aside(tmp_path, monkeypatch, caplog):
    """A plan reads only (issue 21): an unreadable partial file is skipped there, and deleted with a warning
    by the run that then embeds."""
    from evals_repro.embedders.cache import PARTIAL_DIR
    from evals_repro.providers.plan import Plan

    with FakeVoyage() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "plan-test-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        ctx = MethodContext(benchmark="kill", options={"workers": 1, "timeout": 60})
        embedder = build_embedder("voyage-4-lite", ctx)
        cache = EmbeddingCache.for_method(tmp_path / "cache", "kill", "voyage-4-lite", embedder, ctx.usage)
        items = [EmbedItem(text=t) for t in TEXTS[:4]]
        damaged = cache.root / PARTIAL_DIR / cache.lookup(items, "document").settings.hex() / "torn.emb"
        damaged.parent.mkdir(parents=True)
        damaged.write_bytes(b"evals-repro-partial-embeddings\n{not json")

        planned = Plan()
        cache.plan(items, "document", planned)
        assert [(li.items, li.held) for li in planned.lines.values()] == [(4, 0)]
        assert damaged.read_bytes() == b"evals-repro-partial-embeddings\n{not json"
        assert fake.requests == []

        with caplog.at_level("WARNING"):
            cache.embed(items, "document")
        assert not damaged.exists()
        assert "torn.emb" in caplog.text

"""Children the crash tests start without the driver: `spawn` and `kill_at_lines` for a test that kills
once, and `journal_client`, the small client the harness checks itself with (run in the driver's
forkserver children, so it lives in a module they can import)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path


def spawn(code: str, env: dict[str, str]) -> subprocess.Popen:
    """`python -c code` in a child with `env` added (tests/ importable, no progress bars)."""
    full_env = dict(os.environ, **env, PYTHONPATH=str(Path(__file__).parent), EVALS_REPRO_NO_PROGRESS="1")
    return subprocess.Popen([sys.executable, "-c", code], env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def kill_at_lines(proc: subprocess.Popen, path: Path, lines: int, timeout: float) -> None:
    """SIGKILL `proc` once `path` holds `lines` complete lines (or it ended, or `timeout` seconds passed)."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if path.exists() and path.read_bytes().count(b"\n") >= lines:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


JOURNAL_QUERIES = [f"which {word} is in the maintenance plan" for word in "abcdefghijklmnopqrstuvwxyz"]
JOURNAL_DOCUMENTS = ["the maintenance plan lists every part", "parts are checked once a year", "an unrelated page"]


def journal_client(args: list[str]) -> int:
    """A minimal rerank client to show what the trials catch: reranks JOURNAL_QUERIES through Cohere's
    `/v2/rerank` (CO_API_URL), two at a time, skipping queries already in answers.jsonl, and records each
    answer there as it arrives (`each`) or all of them once every call returned (`at-end`: a killed run
    has paid for answers it does not keep)."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from evals_repro.base.io import JsonlAppender, read_jsonl

    at_end = args == ["at-end"]
    done = {record["query"] for record in read_jsonl(Path("answers.jsonl"), repair=True)}
    held: list[dict] = []
    url = os.environ["CO_API_URL"].rstrip("/") + "/v2/rerank"
    with JsonlAppender(Path("answers.jsonl")) as out, httpx.Client(timeout=60) as client:
        lock = threading.Lock()

        def call(query: str) -> None:
            body = {"model": "rerank-v4.0-pro", "query": query, "documents": JOURNAL_DOCUMENTS}
            reply = client.post(url, json=body, headers={"Authorization": "Bearer journal-key"})
            reply.raise_for_status()
            record = {"query": query, "results": reply.json()["results"]}
            with lock:
                if at_end:
                    held.append(record)
                else:
                    out.append(record)

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(call, [q for q in JOURNAL_QUERIES if q not in done]))
        for record in held:
            out.append(record)
    return 0

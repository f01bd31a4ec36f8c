"""A fake Hugging Face Hub on 127.0.0.1 that the real `datasets`/`huggingface_hub` clients talk to.

API
---
`FakeHub(repos=None)` binds 127.0.0.1 on a free port and serves from a daemon thread as soon
as it is built.

- `repos`: ``{repo_id: {commit_sha: {path_in_repo: bytes}}}`` (dataset repos). Add more with
  `hub.add_repo(repo_id, sha, files, branch="main", repo_type="dataset")`; the last sha added
  under a branch is what that branch resolves to (`branch=None` keeps the commit reachable by
  sha only). `repo_type` may be "dataset", "model" or "space". `gated="auto"` (or "manual")
  makes the repo gated: its info says so, and its files answer 401 `GatedRepo` to a request
  without an `Authorization` header.
- `hub.url`: the endpoint to put in `HF_ENDPOINT` (before `huggingface_hub` is imported:
  `huggingface_hub.constants` and `datasets.config` read the environment at import time).
- `hub.requests`: every request served, as ``(method, path_with_query)``; `hub.clear_requests()`.
- `hub.stop()` closes the socket (clients then see "connection refused", i.e. an unreachable
  Hub); `hub.start()` serves again on the same port.
- `install_environment(hub)` points HF_ENDPOINT at the hub and HF_HOME at a fresh temporary
  folder (removed at exit), clears offline/token settings, and returns that folder. Call it
  before anything imports `huggingface_hub` or `datasets` (tests/conftest.py does, at import);
  it refuses to run later, since those modules read the environment once, at import time.

Endpoints, as the Hub answers them (`{kind}` is `datasets` or `models`, `{rev}` a branch or a
full sha, possibly URL-encoded):

- ``GET /api/{kind}/{repo}`` and ``GET /api/{kind}/{repo}/revision/{rev}``: repo info
  (``id``, ``sha``, ``siblings``, ``cardData`` from README.md's YAML is not parsed: not needed).
- ``GET /api/{kind}/{repo}/tree/{rev}[/{path}]?recursive=``: tree listing (files carry ``oid``,
  ``size`` and, for binary files, ``lfs``); no pagination (fixtures are small).
- ``POST /api/{kind}/{repo}/paths-info/{rev}`` (form field ``paths``, repeated).
- ``HEAD``/``GET /[datasets/|spaces/]{repo}/resolve/{rev}/{path}`` (models have no prefix): file bytes with ``ETag``,
  ``X-Repo-Commit``, ``Content-Length`` (and ``X-Linked-Etag``/``X-Linked-Size`` for LFS
  files); ``Range: bytes=a-b`` is honoured.

Unknown repos, revisions and files get the Hub's 404 with ``X-Error-Code`` ``RepoNotFound``,
``RevisionNotFound`` or ``EntryNotFound``, which `huggingface_hub` maps to its typed errors.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

_TEXT_SUFFIXES = (".md", ".json", ".yaml", ".yml", ".txt", ".csv", ".gitattributes", ".py")
_LAST_MODIFIED = "2026-01-15T00:00:00.000Z"


def _git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _is_lfs(path: str) -> bool:
    return not path.endswith(_TEXT_SUFFIXES)


class FakeHub:
    """The fake Hub server; see the module docstring for the API."""

    def __init__(self, repos: dict[str, dict[str, dict[str, bytes]]] | None = None):
        self.repo_types: dict[str, str] = {}
        self.gated: dict[str, str] = {}
        self.repos: dict[str, dict[str, dict[str, bytes]]] = {}
        self.branches: dict[str, dict[str, str]] = {}
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._connections: set = set()
        for repo_id, commits in (repos or {}).items():
            for sha, files in commits.items():
                self.add_repo(repo_id, sha, files)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.start()

    # -- control -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add_repo(
        self,
        repo_id: str,
        sha: str,
        files: dict[str, bytes],
        branch: str | None = "main",
        repo_type: str = "dataset",
        gated: str | None = None,
    ) -> None:
        if len(sha) != 40:
            raise ValueError(f"commit sha must be 40 hex digits, got {sha!r}")
        if repo_type not in ("dataset", "model", "space"):
            raise ValueError(f"repo_type must be dataset, model or space, got {repo_type!r}")
        with self._lock:
            self.repo_types[repo_id] = repo_type
            if gated:
                self.gated[repo_id] = gated
            self.repos.setdefault(repo_id, {})[sha] = dict(files)
            if branch:
                self.branches.setdefault(repo_id, {})[branch] = sha

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    def start(self) -> None:
        if self._server is not None:
            return
        hub = self

        class Handler(_Handler):
            fake = hub

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-hub", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server = None
        # Keep-alive connections outlive the listening socket: cut them so clients see a dead Hub.
        with self._lock:
            connections, self._connections = list(self._connections), set()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    # -- lookups -------------------------------------------------------------------------
    def resolve(self, repo_id: str, revision: str) -> str | None:
        revision = unquote(revision)
        if revision in self.repos.get(repo_id, {}):
            return revision
        return self.branches.get(repo_id, {}).get(revision)

    def entries(self, files: dict[str, bytes], prefix: str, recursive: bool) -> list[dict]:
        """Tree entries under `prefix` (files and implied folders), in path order."""
        prefix = prefix.strip("/")
        base = f"{prefix}/" if prefix else ""
        found: dict[str, dict] = {}
        for path, data in files.items():
            if not path.startswith(base):
                continue
            rest = path[len(base) :].split("/")
            for depth in range(1, len(rest)):
                folder = base + "/".join(rest[:depth])
                if depth == 1 or recursive:
                    found.setdefault(
                        folder, {"type": "directory", "oid": _git_blob_sha(folder.encode()), "size": 0, "path": folder}
                    )
            if len(rest) == 1 or recursive:
                found[path] = self.file_entry(path, data)
        return [found[key] for key in sorted(found)]

    @staticmethod
    def file_entry(path: str, data: bytes) -> dict:
        entry = {"type": "file", "oid": _git_blob_sha(data), "size": len(data), "path": path}
        if _is_lfs(path):
            entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        return entry


class _Handler(BaseHTTPRequestHandler):
    fake: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - keep test output quiet
        pass

    def setup(self):
        super().setup()
        with self.fake._lock:
            self.fake._connections.add(self.connection)

    def finish(self):
        with self.fake._lock:
            self.fake._connections.discard(self.connection)
        super().finish()

    # -- responses -----------------------------------------------------------------------
    def _send(
        self,
        status: int,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, payload, headers: dict[str, str] | None = None) -> None:
        self._send(200, json.dumps(payload).encode(), headers)

    def _error(self, status: int, code: str, message: str) -> None:
        body = json.dumps({"error": message}).encode()
        self._send(status, body, {"X-Error-Code": code, "X-Error-Message": message})

    # -- routing -------------------------------------------------------------------------
    def _route(self) -> None:
        with self.fake._lock:
            self.fake.requests.append((self.command, self.path))
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        segments = [s for s in parts.path.split("/") if s]
        if len(segments) >= 4 and segments[0] == "api" and segments[1] in ("datasets", "models", "spaces"):
            repo_id = "/".join(segments[2:4])
            if self._typed(repo_id, segments[1][:-1]):
                self._api(repo_id, segments[4:], query)
            return
        n = 1 if segments and segments[0] in ("datasets", "spaces") else 0
        if len(segments) >= n + 5 and segments[n + 2] == "resolve":
            repo_id = "/".join(segments[n : n + 2])
            if self._typed(repo_id, segments[0][:-1] if n else "model"):
                self._resolve(repo_id, segments[n + 3], "/".join(unquote(s) for s in segments[n + 4 :]))
            return
        self._error(404, "NotFound", f"fake hub: no route for {self.command} {parts.path}")

    def _typed(self, repo_id: str, repo_type: str) -> bool:
        """A repo is found only under its own type's URLs, as on the Hub."""
        if self.fake.repo_types.get(repo_id, repo_type) != repo_type:
            self._error(404, "RepoNotFound", f"Repository not found: {repo_type}s/{repo_id}")
            return False
        return True

    def _commit(self, repo_id: str, revision: str) -> tuple[str, dict[str, bytes]] | None:
        if repo_id not in self.fake.repos:
            self._error(404, "RepoNotFound", f"Repository not found: {repo_id}")
            return None
        sha = self.fake.resolve(repo_id, revision)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {unquote(revision)}")
            return None
        return sha, self.fake.repos[repo_id][sha]

    def _api(self, repo_id: str, rest: list[str], query: dict[str, list[str]]) -> None:
        if not rest or rest[0] == "revision":
            found = self._commit(repo_id, rest[1] if len(rest) > 1 else "main")
            if found:
                sha, files = found
                self._json(
                    {
                        "_id": hashlib.md5(repo_id.encode()).hexdigest()[:24],
                        "id": repo_id,
                        "author": repo_id.split("/")[0],
                        "sha": sha,
                        "private": False,
                        "gated": self.fake.gated.get(repo_id, False),
                        "disabled": False,
                        "lastModified": _LAST_MODIFIED,
                        "tags": [],
                        "downloads": 0,
                        "likes": 0,
                        "siblings": [{"rfilename": p} for p in sorted(files)],
                    }
                )
            return
        if rest[0] == "tree" and len(rest) >= 2:
            found = self._commit(repo_id, rest[1])
            if found:
                prefix = "/".join(unquote(s) for s in rest[2:])
                recursive = query.get("recursive", ["false"])[0].lower() in ("true", "1")
                entries = self.fake.entries(found[1], prefix, recursive)
                if prefix and not entries:
                    self._error(404, "EntryNotFound", f"{prefix} does not exist on {rest[1]}")
                else:
                    self._json(entries)
            return
        if rest[0] == "paths-info" and len(rest) >= 2 and self.command == "POST":
            found = self._commit(repo_id, rest[1])
            if found:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode()
                if "json" in (self.headers.get("Content-Type") or ""):
                    paths = json.loads(raw or "{}").get("paths", [])
                else:
                    paths = parse_qs(raw).get("paths", [])
                files = found[1]
                out = []
                for path in paths:
                    path = path.strip("/")
                    if path in files:
                        out.append(self.fake.file_entry(path, files[path]))
                    elif any(p.startswith(path + "/") for p in files):
                        out.append({"type": "directory", "oid": _git_blob_sha(path.encode()), "size": 0, "path": path})
                self._json(out)
            return
        self._error(404, "NotFound", f"fake hub: no API route {'/'.join(rest)}")

    def _resolve(self, repo_id: str, revision: str, path: str) -> None:
        found = self._commit(repo_id, revision)
        if not found:
            return
        sha, files = found
        if repo_id in self.fake.gated and not self.headers.get("Authorization"):
            self._error(401, "GatedRepo", f"Access to dataset {repo_id} is restricted. You must have access to it.")
            return
        if path not in files:
            self._error(404, "EntryNotFound", f"{path} does not exist on {unquote(revision)}")
            return
        data = files[path]
        entry = self.fake.file_entry(path, data)
        etag = entry["lfs"]["oid"] if "lfs" in entry else entry["oid"]
        headers = {"ETag": f'"{etag}"', "X-Repo-Commit": sha, "Accept-Ranges": "bytes"}
        if "lfs" in entry:
            headers.update({"X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(len(data))})
        ctype = "text/plain; charset=utf-8" if not _is_lfs(path) else "application/octet-stream"
        ranged = self.headers.get("Range")
        if ranged and ranged.startswith("bytes=") and self.command == "GET":
            start_s, _, end_s = ranged[len("bytes=") :].partition("-")
            start = int(start_s) if start_s else max(len(data) - int(end_s), 0)
            end = min(int(end_s), len(data) - 1) if (end_s and start_s) else len(data) - 1
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            self._send(206, data[start : end + 1], headers, ctype)
            return
        self._send(200, data, headers, ctype)

    do_GET = _route
    do_HEAD = _route
    do_POST = _route


def install_environment(hub: FakeHub) -> Path:
    """Route `huggingface_hub`/`datasets` in this process (and its children) to `hub`."""
    early = [name for name in ("huggingface_hub", "datasets") if name in sys.modules]
    if early:
        raise RuntimeError(f"{', '.join(early)} already imported: the fake Hub's environment would be ignored")
    home = Path(tempfile.mkdtemp(prefix="evals-repro-hf-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    for name in (
        "HF_HUB_OFFLINE",
        "HF_DATASETS_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HF_HUB_CACHE",
        "HF_DATASETS_CACHE",
        "HUGGINGFACE_HUB_CACHE",
        "HF_XET_CACHE",
    ):
        os.environ.pop(name, None)
    os.environ.update(
        {
            "HF_ENDPOINT": hub.url,
            "HF_HOME": str(home),
            "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
        }
    )
    return home

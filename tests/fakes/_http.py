"""A tiny threaded HTTP server on 127.0.0.1:0 for provider fakes: routing, a request log, faults.

Faults are queued per route prefix: `fail(path_prefix, status, times=, headers=, body=)` answers
the next `times` matching requests with that status instead of the real handler.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Handler = Callable[["Request"], tuple[int, Any]]


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    params: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.body or b"{}")


@dataclass
class Fault:
    prefix: str
    status: int
    times: int
    headers: dict[str, str]
    body: Any


class FakeServer:
    def __init__(self) -> None:
        self.routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self.requests: list[Request] = []
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    # -- routing ------------------------------------------------------------------------
    def route(self, method: str, pattern: str, handler: Handler) -> None:
        self.routes.append((method, re.compile(f"^{pattern}$"), handler))

    def fail(self, prefix: str, status: int, times: int = 1, headers: dict[str, str] | None = None,
             body: Any = None) -> None:
        with self._lock:
            self.faults.append(Fault(prefix, status, times, headers or {}, body or {"detail": "injected",
                                                                                   "message": "injected"}))

    def count(self, method: str, prefix: str) -> int:
        with self._lock:
            return sum(1 for r in self.requests if r.method == method and r.path.startswith(prefix))

    def _take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if path.startswith(fault.prefix) and fault.times > 0:
                    fault.times -= 1
                    return fault
        return None

    def dispatch(self, request: Request) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            self.requests.append(request)
        fault = self._take_fault(request.path)
        if fault is not None:
            return fault.status, fault.body, fault.headers
        for method, pattern, handler in self.routes:
            match = pattern.match(request.path)
            if match and method == request.method:
                request.params = match.groupdict()
                status, body = handler(request)
                return status, body, {}
        return 404, {"detail": f"no route {request.method} {request.path}", "message": "not found"}, {}

    # -- lifecycle ----------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeServer":
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Request(self.command, self.path.split("?")[0],
                                  {k.lower(): v for k, v in self.headers.items()}, body)
                status, payload, headers = server.dispatch(request)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _serve

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def overlap_score(query: str, document: str) -> float:
    """Deterministic relevance: share of query words found in the document (a fake cross-encoder)."""
    query_words = set(words(query))
    if not query_words:
        return 0.0
    doc_words = set(words(document))
    return len(query_words & doc_words) / len(query_words)

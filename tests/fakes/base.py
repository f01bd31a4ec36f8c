"""A threaded stdlib HTTP server on 127.0.0.1 (port 0) with routes, request records and scripted replies.

Extend a provider fake by subclassing it and adding handlers:

    class FakeVoyageWithRerank(FakeVoyage):
        @route("POST", r"/v1/rerank")
        def rerank(self, request): return Reply(200, {...})

A handler takes a `Request` and returns a `Reply`. `script(...)` queues replies that are served before the
routes (optionally only for paths matching a regex): scripted errors, slow answers (`sleep`) for client
timeouts, raw malformed bodies. `error_reply(status, message)` builds the provider's own error body. With
`api_key` set, a request to a path the server `guarded`s without `Authorization: Bearer <key>` gets its
`unauthorized()` reply (each fake follows its server: which paths, which refusal).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

WORD = re.compile(r"\w+", re.UNICODE)
DEFAULT_DIMENSION = 64


def bag_of_words(text: str, dimension: int = DEFAULT_DIMENSION) -> np.ndarray:
    """Deterministic unit vector: each lower-cased word hashed into a bucket (so shared words mean similarity)."""
    vector = np.zeros(dimension, dtype=np.float32)
    for word in WORD.findall(text.lower()):
        bucket = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little") % dimension
        vector[bucket] += 1.0
    norm = np.linalg.norm(vector)
    if norm == 0:
        vector[0] = 1.0
        return vector
    return vector / norm


def image_words(data: bytes) -> str:
    """A stand-in 'text' for image bytes, so an image embeds deterministically."""
    return "image" + hashlib.blake2b(data, digest_size=6).hexdigest()


def count_tokens(text: str) -> int:
    """The fake's own token count (words + punctuation-ish), deliberately not the client's estimate."""
    return max(1, round(len(WORD.findall(text)) * 1.3))


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    match: re.Match | None = None
    received: float = field(default_factory=time.monotonic)
    connection: socket.socket | None = field(default=None, repr=False, compare=False)  # the client's connection

    @property
    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Reply:
    status: int = 200
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # sent as-is instead of json (malformed bodies)
    sleep: float = 0.0  # seconds to wait before answering (client timeouts); a scripted
    # `Reply(200, sleep=s)` with no body delays the normal answer
    path: str | None = None  # scripted replies only: regex the request path must match
    drop: bool = False  # close the connection without answering (a dropped connection)


def route(method: str, pattern: str) -> Callable:
    def mark(func: Callable) -> Callable:
        func._route = (method, re.compile(pattern + r"\Z"))
        return func

    return mark


class FakeServer:
    """Start with `with FakeX() as fake:`; `fake.url` is the base URL; `fake.requests` records every call."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._routes = [
            getattr(self, name)._route + (getattr(self, name),)
            for name in dir(type(self))
            if hasattr(getattr(type(self), name), "_route")
        ]
        self._server: ThreadingHTTPServer | None = None
        self._connections = 0  # connections accepted (or being accepted) whose handler has not finished
        # Held from writing an answer until `after` returned, when set: a fake that exits mid-run takes it
        # first, so no answer leaves without being recorded.
        self.answer_lock: threading.Lock | None = None
        self.api_key: str | None = None  # set: requests to `guarded` paths need `Authorization: Bearer <key>`

    # -- scripting ---------------------------------------------------------------------------------
    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def error_reply(self, status: int, message: str = "error", headers: dict | None = None) -> Reply:
        """The provider's error body; subclasses override with their wire format."""
        return Reply(status, {"message": message}, headers or {})

    def fail(self, status: int, times: int = 1, retry_after: str | None = None, path: str | None = None) -> None:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        for _ in range(times):
            reply = self.error_reply(status, f"scripted {status}", headers)
            reply.path = path
            self.script(reply)

    def _scripted(self, path: str) -> Reply | None:
        with self._lock:
            for reply in self._script:
                if reply.path is None or re.search(reply.path, path):
                    self._script.remove(reply)
                    return reply
        return None

    def before(self, request: Request) -> Reply | None:
        """Hook run before routing (e.g. a rate limiter); return a Reply to answer instead."""
        return None

    # -- the key, as the server checks it (subclasses follow their server: which paths, what refusal) -----
    def guarded(self, path: str) -> bool:
        """Whether a request to `path` needs the key (when `api_key` is set)."""
        return True

    def authorized(self, request: Request) -> bool:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and token == self.api_key

    def unauthorized(self) -> Reply:
        return Reply(401, {"error": "Unauthorized"})

    def after(self, request: Request, reply: Reply) -> None:
        """Hook run once the reply was written in full (e.g. to record when a request completed)."""

    # -- dispatch ----------------------------------------------------------------------------------
    def dispatch(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
        path = request.path.split("?", 1)[0]
        if self.api_key is not None and self.guarded(path) and not self.authorized(request):
            return self.unauthorized()
        reply = self._scripted(request.path)
        if reply is not None and (reply.status != 200 or reply.raw is not None or reply.json is not None or reply.drop):
            return reply
        handler_reply = self.before(request) or self._route(request)
        if reply is not None:  # a scripted 200 with only a delay: answer normally, late
            handler_reply.sleep = reply.sleep
        return handler_reply

    def _route(self, request: Request) -> Reply:
        path = request.path.split("?", 1)[0]
        for method, pattern, handler in self._routes:
            match = pattern.match(path)
            if match and method == request.method:
                request.match = match
                return handler(request)
        return self.error_reply(404, f"no route for {request.method} {path}")

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Wait until every connection made so far was handled to its end: each request on it dispatched,
        its answer written (or refused) and `after` run. Only once its clients are gone (a kept-alive
        connection of a live client keeps the server busy); raises after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            # Pending first, then the count: a connection leaves the accept queue only after it was counted.
            pending = bool(select.select([self._server.socket], [], [], 0)[0])
            with self._lock:
                busy = self._connections
            if not pending and busy == 0:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{type(self).__name__}: {busy} connections still handled after {timeout} s")
            time.sleep(0.005)

    def _count_connections(self, change: int) -> None:
        with self._lock:
            self._connections += change

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    # -- lifecycle ---------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: without TCP_NODELAY, Nagle holds the body until
            # the client's delayed ACK (about 40 ms per request on a kept-alive connection).
            disable_nagle_algorithm = True

            def log_message(self, *args) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                request = Request(self.command, self.path, headers, body, connection=self.connection)
                reply = fake.dispatch(request)
                if reply.sleep:
                    time.sleep(reply.sleep)
                if reply.drop:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                payload = reply.raw if reply.raw is not None else json.dumps(reply.json).encode()
                with fake.answer_lock or contextlib.nullcontext():
                    try:
                        self.send_response(reply.status)
                        if not any(key.lower() == "content-type" for key in reply.headers):
                            self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(payload)))
                        for key, value in reply.headers.items():
                            self.send_header(key, value)
                        self.end_headers()
                        self.wfile.write(payload)
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):
                        return
                    fake.after(request, reply)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        class Server(ThreadingHTTPServer):
            """Counts each connection from before it is accepted until its handler thread ends."""

            def get_request(self):
                fake._count_connections(1)
                try:
                    return super().get_request()
                except BaseException:
                    fake._count_connections(-1)
                    raise

            def process_request(self, request, client_address) -> None:
                try:
                    super().process_request(request, client_address)
                except BaseException:
                    fake._count_connections(-1)
                    raise

            def process_request_thread(self, request, client_address) -> None:
                try:
                    super().process_request_thread(request, client_address)
                finally:
                    fake._count_connections(-1)

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

"""Stands in for the `vllm` executable in the serve-embedder / serve-reranker tests: run as a script, it prints one
line (what a replica's log holds), records its arguments, GPU visibility, pid and a digest of VLLM_API_KEY in
`$STAND_IN_RECORD.<port>`, answers /health on --port and exits on SIGTERM."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import signal
import sys
from pathlib import Path

SCRIPT = Path(__file__)  # run as [sys.executable, str(SCRIPT), "serve", ..., "--port", N]


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def main(args: list[str]) -> None:
    port = int(args[args.index("--port") + 1])
    print("vllm stand-in started with", args, flush=True)
    key = os.environ.get("VLLM_API_KEY", "")
    record = {
        "argv": args,
        "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "pid": os.getpid(),
        "key_sha256": hashlib.sha256(key.encode()).hexdigest(),
    }
    with open(os.environ["STAND_IN_RECORD"] + f".{port}", "w") as out:
        json.dump(record, out)
    server = http.server.HTTPServer(("127.0.0.1", port), Health)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])

"""A journal of paid calls whose answers a run reuses: each answer is appended and flushed as it arrives.

`run` with a hosted reranker or a store search makes one paid call per query; a killed run used to send
them all again. A `CallJournal` (`<cache-dir>/<kind>/<key>.jsonl`, one file per method and subset, which
the result unit's lock gives one writer) holds `{key, answer}` per completed call, the key a digest of
everything that decides the answer (the provider's description of the model or store, the query, the
documents), so a call with any other input is never answered from it. Read back before the calls; an
answer found there is not paid for again. A torn last line (a kill mid-write) is dropped, a damaged one
set aside (`io.read_jsonl`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .io import JsonlAppender, read_jsonl

T = TypeVar("T")


def journal_path(folder: Path, *unit: str) -> Path:
    """The journal of one unit of calls (a method on a subset) under `folder`."""
    return Path(folder) / (hashlib.sha256("\x1f".join(unit).encode("utf-8")).hexdigest()[:24] + ".jsonl")


class CallJournal:
    def __init__(self, path: Path, identity: Any) -> None:
        self.path = Path(path)
        self.identity = json.dumps(identity, sort_keys=True, default=str)
        self.done: dict[str, Any] = {
            r["key"]: r["answer"] for r in read_jsonl(self.path, damaged="set-aside") if "key" in r and "answer" in r
        }
        self.reused = 0
        self._out: JsonlAppender | None = None
        self._lock = threading.Lock()

    def key(self, parts: list[str]) -> str:
        digest = hashlib.sha256(self.identity.encode("utf-8"))
        for part in parts:
            digest.update(b"\x1f" + part.encode("utf-8"))
        return digest.hexdigest()

    def answer(self, parts: list[str], call: Callable[[], T], encode: Callable[[T], Any] = lambda a: a) -> Any:
        """The journaled answer for `parts`, or `call()`'s (journaled before it is returned)."""
        key = self.key(parts)
        with self._lock:
            if key in self.done:
                self.reused += 1
                return self.done[key]
        answer = encode(call())
        with self._lock:
            if self._out is None:
                self._out = JsonlAppender(self.path)
            self._out.append({"key": key, "answer": answer})
            self.done[key] = answer
        return answer

    def close(self) -> None:
        with self._lock:
            if self._out is not None:
                self._out.close()
                self._out = None

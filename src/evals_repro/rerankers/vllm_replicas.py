"""The replicas of a local reranker: where they are (environment), and which one takes the next request.

One `ReplicaSet` per model and URL list per process, shared by every reranker instance and worker
thread, so that load counts and verified replicas are seen by all of them.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from ..errors import UsageError
from .local_models import LocalRerankerSpec


def replica_urls(spec: LocalRerankerSpec, environ: dict[str, str] | None = None) -> list[str]:
    """The replicas named by the spec's environment variable, or serve-reranker's first local port."""
    raw = (os.environ if environ is None else environ).get(spec.urls_env, "").strip()
    if not raw:
        return [f"http://127.0.0.1:{spec.base_port}"]
    urls = [part.strip().rstrip("/") for part in raw.split(",") if part.strip()]
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise UsageError(
                f"{spec.urls_env}: '{url}' is not an http(s) URL",
                f"write e.g. {spec.urls_env}=http://127.0.0.1:{spec.base_port},http://127.0.0.1:{spec.base_port + 1}",
            )
    if len(set(urls)) != len(urls):
        raise UsageError(f"{spec.urls_env} names a replica twice: {raw}", "list each replica URL once")
    return urls


@dataclass
class Replica:
    url: str
    index: int
    in_flight: int = 0
    sent: int = 0
    tail_ids: tuple[int, ...] | None = None  # the template tail's tokens, fetched when verified
    lock: threading.Lock = field(default_factory=threading.Lock)


class ReplicaSet:
    """The replicas of one model in this process, shared by every reranker instance and thread."""

    def __init__(self, urls: list[str]) -> None:
        self.replicas = [Replica(url, i) for i, url in enumerate(urls)]
        self._lock = threading.Lock()
        self._next = 0

    def acquire(self) -> Replica:
        """The replica with the fewest requests in flight; among equals, the next in round-robin order."""
        with self._lock:
            count = len(self.replicas)
            low = min(r.in_flight for r in self.replicas)
            pick = min((r for r in self.replicas if r.in_flight == low), key=lambda r: (r.index - self._next) % count)
            self._next = pick.index + 1
            pick.in_flight += 1
            pick.sent += 1
            return pick

    def release(self, replica: Replica) -> None:
        with self._lock:
            replica.in_flight -= 1


_SETS: dict[tuple[str, tuple[str, ...]], ReplicaSet] = {}
_SETS_LOCK = threading.Lock()


def replica_set(name: str, urls: list[str]) -> ReplicaSet:
    with _SETS_LOCK:
        key = (name, tuple(urls))
        if key not in _SETS:
            _SETS[key] = ReplicaSet(urls)
        return _SETS[key]


def reset_replica_sets() -> None:
    """Forget verified replicas and load counts (tests start fresh servers on new ports)."""
    with _SETS_LOCK:
        _SETS.clear()

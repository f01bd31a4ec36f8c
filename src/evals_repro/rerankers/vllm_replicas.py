"""The replicas of a local reranker: where they are (environment), and which one takes the next request.

One `ReplicaSet` per model and URL list per process, shared by every reranker instance and worker
thread, so that load counts and verified replicas are seen by all of them.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from ..base.errors import UsageError
from ..providers.replicas import Replica as PoolReplica
from ..providers.replicas import ReplicaPool
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
class Replica(PoolReplica):
    tail_ids: tuple[int, ...] | None = None  # the template tail's tokens, fetched when verified


class ReplicaSet(ReplicaPool):
    """The replicas of one model in this process, shared by every reranker instance and thread
    (least-in-flight, round robin among equals: `providers.replicas.ReplicaPool`)."""

    replicas: list[Replica]  # type: ignore[assignment]

    def make_replica(self, url: str, index: int) -> Replica:
        return Replica(url, index)

    def acquire(self) -> Replica:
        replica = super().acquire()
        assert isinstance(replica, Replica)
        return replica


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

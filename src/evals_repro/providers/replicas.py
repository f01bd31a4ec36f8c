"""Replicas of one served model: which URL takes the next request, and what happens when one dies.

Requests go to the live replica with the fewest requests in flight (round robin among equals). A
replica that refuses or drops the connection is marked down, with one warning line naming it (and one
info line when it answers again), and the same request is sent at once to another live one: the request
was not answered, so nothing is paid twice, and the caller sees one answer or, when every replica is
down, one clear error. A down replica is tried again after `REVIVE_SECONDS` (a restarted server comes
back into the rotation; one still down is not warned about twice). Timeouts and HTTP errors are not
failovers: they go back to `providers.retry.call_with_retries`, which retries under its own policy.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..base.errors import ConfigurationError, ProviderError, UsageError, choices

T = TypeVar("T")
log = logging.getLogger(__name__)

REVIVE_SECONDS = 30.0
SERVED_MODELS = "served_models"  # the run option that records what the servers serve (run_request.RESULT_OPTIONS)


def record_identity(options: dict[str, Any], component: str, identity: dict[str, Any]) -> None:
    """Note in the run's options what a server reported for `component` (`openai:m`, `rerank-api:m`), so a result
    computed against another checkpoint served under the same name does not cover a `--resume`. One JSON string
    (options values must stay hashable), every component of the pipeline in it, keys sorted."""
    import json

    known = json.loads(options.get(SERVED_MODELS) or "{}")
    known[component] = identity
    options[SERVED_MODELS] = json.dumps(known, sort_keys=True)


IDENTITY_FIELDS = ("id", "root", "parent", "owned_by", "max_model_len", "revision")  # a /v1/models card's checkpoint


TEI_OWNER = "text-embeddings-inference"  # owned_by of the card TEI's /info stands in for


def tei_card(url: str, get: Callable[[str], Any], key_hint: str) -> dict[str, Any] | None:
    """TEI serves one model and lists none: its /info (model_id, model_sha, max_input_length) stands in for the
    /v1/models card, or None when `url` answers no such /info. `get` sends the GET (with the caller's client/key);
    a refusal (TEI started with --api-key guards /info) is one line with `key_hint`."""
    import httpx

    root = url[: -len("/v1")] if url.endswith("/v1") else url
    try:
        response = get(root + "/info")
        if response.status_code in (401, 403):
            raise ConfigurationError(f"{root}/info refused the request (HTTP {response.status_code})", key_hint)
        info = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("model_id"), str):
        return None
    return {
        "id": info["model_id"],
        "revision": info.get("model_sha"),
        "max_model_len": info.get("max_input_length"),
        "owned_by": TEI_OWNER,
        "max_client_batch_size": info.get("max_client_batch_size"),  # not identity: documents per request
    }


def identify_served_model(
    urls: list[str], model: str, list_models: Callable[[str], list[dict[str, Any]]], method: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The model as every replica's model list describes it (`IDENTITY_FIELDS`), and each replica's whole card.
    One line naming the replica that does not serve `model` (hint: `<method>:<one it lists>`) or that describes it
    otherwise than the one before: replicas behind one name must serve the same checkpoint."""
    from .keys import redact

    found: dict[str, Any] | None = None
    served: list[dict[str, Any]] = []
    for url in urls:
        cards = {str(card.get("id")): card for card in list_models(url)}
        card = cards.get(model)
        if card is None:
            raise UsageError(
                f"{url} does not serve '{model}'",
                f"it lists {choices(sorted(cards)) or 'no model'}: write {method}:<one of them>",
            )
        identity = {key: card[key] for key in IDENTITY_FIELDS if card.get(key) is not None}
        if found is not None and identity != found:
            raise UsageError(
                redact(f"replica {url} describes '{model}' as {identity}, another as {found}"),
                "every replica must serve the same checkpoint: restart them alike",
            )
        found = identity
        served.append(card)
    assert found is not None
    return found, served


def connection_lost(exc: BaseException) -> bool:
    """An httpx call whose replica refused or dropped the connection (it is gone), not a timeout (it may be busy)."""
    import httpx

    return isinstance(exc, httpx.TransportError) and not isinstance(exc, httpx.TimeoutException)


def parse_replica_urls(raw: str | list[str], source: str, example: str = "http://127.0.0.1:8000/v1") -> list[str]:
    """URLs from a comma-separated list (`--base-url a,b`, `OPENAI_BASE_URLS=a,b`): http(s), each once."""
    parts = raw if isinstance(raw, list) else [raw]
    urls = [url.strip().rstrip("/") for part in parts for url in part.split(",") if url.strip()]
    if not urls:
        raise UsageError(f"{source} names no URL", f"write e.g. {source}={example}")
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"{source}: '{url}' is not an http(s) URL", f"write e.g. {example}")
    seen: set[str] = set()
    for url in urls:
        if url in seen:
            raise UsageError(f"{source} names the replica {url} twice", "list each replica URL once")
        seen.add(url)
    return urls


@dataclass
class Replica:
    url: str
    index: int
    in_flight: int = 0
    sent: int = 0
    down_since: float | None = None  # monotonic time it was marked down; None while it is up
    lock: threading.Lock = field(default_factory=threading.Lock)


class ReplicaPool:
    """The replicas of one model in this process, shared by every thread that calls it."""

    def __init__(self, urls: list[str], clock: Callable[[], float] = time.monotonic) -> None:
        self.replicas = [self.make_replica(url, i) for i, url in enumerate(urls)]
        self._lock = threading.Lock()
        self._next = 0
        self.clock = clock
        self.failovers = 0

    def make_replica(self, url: str, index: int) -> Replica:
        return Replica(url, index)

    def _usable(self, replica: Replica, now: float) -> bool:
        return replica.down_since is None or now - replica.down_since >= REVIVE_SECONDS

    def acquire(self) -> Replica:
        """The live replica with the fewest requests in flight; among equals, the next in round-robin order.

        When every replica is down, the one down longest is tried (it may have come back)."""
        with self._lock:
            count = len(self.replicas)
            now = self.clock()
            live = [r for r in self.replicas if self._usable(r, now)]
            if not live:
                live = [min(self.replicas, key=lambda r: r.down_since or 0.0)]
            low = min(r.in_flight for r in live)
            pick = min((r for r in live if r.in_flight == low), key=lambda r: (r.index - self._next) % count)
            self._next = pick.index + 1
            pick.in_flight += 1
            pick.sent += 1
            return pick

    def release(self, replica: Replica) -> None:
        with self._lock:
            replica.in_flight -= 1

    def mark_down(self, replica: Replica, what: str = "", cause: BaseException | None = None) -> None:
        """Take `replica` out of the rotation; a replica that was up is named in one warning line."""
        with self._lock:
            was_up = replica.down_since is None
            replica.down_since = self.clock()
            self.failovers += 1
            others = sum(1 for r in self.replicas if r is not replica and self._usable(r, replica.down_since))
        if was_up:
            reason = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
            rest = f"its requests go to the {others} other live replica(s)" if others else "no other replica is up"
            log.warning(f"{what + ': ' if what else ''}replica {replica.url} stopped answering{reason}; {rest}")

    def mark_up(self, replica: Replica, what: str = "") -> None:
        if replica.down_since is not None:
            with self._lock:
                came_back = replica.down_since is not None
                replica.down_since = None
            if came_back:
                log.info(f"{what + ': ' if what else ''}replica {replica.url} answers again")

    def live_count(self) -> int:
        now = self.clock()
        return sum(1 for r in self.replicas if self._usable(r, now))

    def call(self, send: Callable[[Replica], T], is_down: Callable[[BaseException], bool], what: str) -> T:
        """`send(replica)` on the best replica; a replica that is down is skipped and the call sent to the next.

        Each replica is tried at most once per call; when all of them are down the last error is raised as
        a ProviderError naming them (retry.call_with_retries does not retry an EvalsError)."""
        tried: set[int] = set()
        last: BaseException | None = None
        while len(tried) < len(self.replicas):
            replica = self.acquire()
            if replica.index in tried:
                self.release(replica)
                replica = next((r for r in self.replicas if r.index not in tried), replica)
                with self._lock:
                    replica.in_flight += 1
                    replica.sent += 1
            tried.add(replica.index)
            try:
                result = send(replica)
            except BaseException as exc:
                if not is_down(exc):
                    raise
                self.mark_down(replica, what, exc)
                last = exc
                continue
            finally:
                self.release(replica)
            self.mark_up(replica, what)
            return result
        # Each replica was named as it went down (mark_down's warning): the error stays one short line.
        which = self.replicas[0].url if len(self.replicas) == 1 else f"{len(self.replicas)} replicas, named above"
        detail = f"; last: {type(last).__name__}" if last is not None else ""
        raise ProviderError(
            f"{what}: every replica is down ({which}{detail})",
            "start the servers (or fix --base-url / *_URLS) and rerun: finished work is kept",
        )

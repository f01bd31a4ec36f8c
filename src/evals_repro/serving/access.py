"""Who reaches the replicas: the address they listen on (`--host`), the URL the clients are given, and the key.

The key comes from `VLLM_API_KEY` (the environment or `.env`), never from our command line: each replica is
given it in its environment, where `vllm serve` reads it as it reads `--api-key`, so it shows in no `ps`
listing, printed command, shell history or log. vLLM 0.33.0 checks it only on paths under /v1, /v2,
/inference and /cohere (entrypoints/serve/middleware/authenticate.py): the root-level /classify, /tokenize,
/rerank, /score, /health and /metrics answer anyone who reaches the port, so a replica on a shared network
also needs a firewall.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable

from ..base.errors import UsageError
from ..providers.settings import SERVER_KEY_ENV

log = logging.getLogger(__name__)
WILDCARD_HOSTS = ("0.0.0.0", "::")  # every interface: the clients are given this machine's name instead
LOCAL_PROBE = {"0.0.0.0": "127.0.0.1", "::": "::1"}  # where this machine reaches a wildcard listener


def check_host(host: str) -> str:
    """`--host`: an address or name with no scheme, port or path (vLLM's --host takes it as is)."""
    if not host or any(mark in host for mark in ("/", " ")) or host.count(":") == 1:
        raise UsageError(
            f"--host '{host}' is not an address to listen on",
            "give an address or name alone: 127.0.0.1 (this machine only), 0.0.0.0 (every interface) or a host name",
        )
    return host


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def advertised_host(host: str) -> str:
    """The host the clients use: this machine's name for a wildcard address, else `host` itself."""
    return socket.gethostname() if host in WILDCARD_HOSTS else host


def probe_host(host: str) -> str:
    """The host this machine reaches its own replica at (for /health)."""
    return LOCAL_PROBE.get(host, host)


def is_loopback(host: str) -> bool:
    return host == "localhost" or host.startswith("127.") or host == "::1"


def replica_key() -> str | None:
    """VLLM_API_KEY, for the replicas' environment (a malformed one is refused naming the variable)."""
    from ..providers.keys import server_key

    return server_key("vllm").value


def announce_access(command: str, host: str, key: str | None, echo: Callable[[str], None]) -> None:
    """What the user must know about who reaches the replicas, never the key: with a key, the variable to export
    where the evaluation runs (`echo`); replicas open to the network with no key, one warning line."""
    if key:
        echo(
            f"{command}: the replicas require the key in {SERVER_KEY_ENV}: export the same {SERVER_KEY_ENV} "
            "wherever you run the evaluation (vLLM checks it under /v1 only: keep the ports behind a firewall)"
        )
    elif not is_loopback(host):
        log.warning(
            f"{command}: the replicas listen on {host} with no key: anyone who reaches these ports can use them "
            f"(export {SERVER_KEY_ENV} before starting to require one)"
        )


def refuse_key_option() -> UsageError:
    return UsageError(
        "--api-key is not taken on the command line: it would show in `ps` and in your shell history",
        f"export {SERVER_KEY_ENV}=... (or put it in .env): each replica reads it from its environment",
    )

"""API keys from the environment or a `.env` file; a key never appears in an error, log or result."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import ConfigurationError

_loaded = False
_lock = threading.Lock()


def load_dotenv_once(path: Path | None = None) -> None:
    """Read `.env` (searched upwards from the working directory) once; the environment always wins.

    The file is checked first: bytes that are not UTF-8 or a line python-dotenv cannot parse are one
    ConfigurationError naming the file and the line (never its content: it holds keys), not a
    UnicodeDecodeError or dotenv's own warning."""
    global _loaded
    with _lock:
        if _loaded:
            return
        from dotenv import find_dotenv, load_dotenv

        dotenv_path = str(path) if path is not None else find_dotenv(usecwd=True)
        if dotenv_path:
            import io

            load_dotenv(stream=io.StringIO(_checked_dotenv(Path(dotenv_path))), override=False)
        _loaded = True


def _checked_dotenv(path: Path) -> str:
    """The text of a `.env` file, or ConfigurationError naming `path:line` and what is wrong there."""
    from dotenv.parser import parse_stream

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(
            f"{path}: cannot read the .env file ({exc.strerror or type(exc).__name__})",
            "fix its permissions, or remove it and export the keys",
        ) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data[:start].count(b"\n") + 1
        raise ConfigurationError(
            f"{path}:{line}: the .env file is not valid UTF-8 (byte 0x{data[start]:02x})",
            "save .env as UTF-8 (keys are plain ASCII)",
        ) from None
    import io

    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            raise ConfigurationError(
                f"{path}:{binding.original.line}: the .env file has a line that cannot be parsed",
                "write KEY=value on that line (quote a value holding spaces, # or quotes), or comment it out with #",
            )
    return text


# Other names the SDKs (and our .env.example) accept for the same key, tried in order.
ALIASES = {"COHERE_API_KEY": ("CO_API_KEY",), "GEMINI_API_KEY": ("GOOGLE_API_KEY",)}  # the SDKs' own names


def require_key(env_var: str) -> str:
    """The key held by `env_var` (or an alias), else ConfigurationError naming the variable, never a value."""
    return _keys([env_var])[env_var]


def require_keys(env_vars: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Every key a command needs, checked at once before any work: all the missing (or malformed) ones are
    named in one ConfigurationError, never a value."""
    return _keys(list(dict.fromkeys(env_vars)))


def _keys(env_vars: list[str]) -> dict[str, str]:
    load_dotenv_once()
    found: dict[str, str] = {}
    missing: list[str] = []
    malformed: list[str] = []
    for env_var in env_vars:
        names = (env_var, *ALIASES.get(env_var, ()))
        name, value = next(
            ((n, os.environ.get(n, "").strip()) for n in names if os.environ.get(n, "").strip()), ("", "")
        )
        if not value:
            missing.append(" or ".join(names))
            continue
        flaw = key_flaw(value)
        if flaw:
            malformed.append(f"{name} {flaw}")
            continue
        found[env_var] = value
    parts, hints = [], []
    if missing:
        many = len(missing) > 1
        first = missing[0].split(" or ")[0]
        parts.append(f"missing API key{'s' if many else ''}: {', '.join(missing)} {'are' if many else 'is'} not set")
        hints.append(
            f"export {'each (' if many else ''}{first}=...{')' if many else ''} or add {'them' if many else 'it'} "
            "to a .env file in the working directory (see .env.example)"
        )
    if malformed:
        parts.append(f"malformed API key{'s' if len(malformed) > 1 else ''}: {'; '.join(malformed)}")
        hints.append(
            "set the key again as the provider shows it (one line, no quotes or spaces), in the environment or .env"
        )
    if parts:
        raise ConfigurationError("; ".join(parts), "; ".join(hints))
    return found


def key_flaw(value: str) -> str:
    """What makes a key unusable in an HTTP header (a line break, a control character, a space, non-ASCII),
    and where: '' for a usable key. Never the key or any part of it."""
    for position, char in enumerate(value, start=1):
        if char in "\r\n":
            return f"holds a line break (character {position} of {len(value)})"
        if char.isspace():
            return f"holds whitespace (character {position} of {len(value)})"
        if ord(char) < 32 or ord(char) == 127:
            return f"holds a control character (character {position} of {len(value)})"
        if ord(char) > 126:
            return f"holds a non-ASCII character (character {position} of {len(value)})"
        if char in "\"'":
            return f"holds a quote (character {position} of {len(value)})"
    return ""


@dataclass(frozen=True)
class ServerKey:
    """The key sent to a server of your own (vLLM, TEI, Infinity): `value` from `name`, the first of `names` set;
    no key when none is. Never shown: `repr` leaves the value out."""

    names: tuple[str, ...]
    name: str | None = None
    value: str | None = field(default=None, repr=False)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.value}"} if self.value else {}

    def hint(self) -> str:
        """What to check when a server refused the request (HTTP 401/403)."""
        if self.name:
            return f"{self.name} was sent: set it to the key the server was started with"
        return f"no key was sent: export {' or '.join(self.names)} with the key the server was started with"


def server_key(client: str) -> ServerKey:
    """The key `client` ("openai", "rerank-api", "vllm") sends to a server of your own (settings.SERVER_KEYS);
    a key that cannot go in a header is refused naming its variable, never its value."""
    from .settings import SERVER_KEYS

    load_dotenv_once()
    names = SERVER_KEYS[client]
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            flaw = key_flaw(value)
            if flaw:
                raise ConfigurationError(
                    f"malformed API key: {name} {flaw}",
                    "set the key again as the server was given it (one line, no quotes or spaces), in the "
                    "environment or .env",
                )
            return ServerKey(names, name, value)
    return ServerKey(names)


FRAGMENT = 8  # a run of this many characters of a key (in any of its forms) is redacted
AUTH_HEADERS = ("authorization", "x-goog-api-key", "x-api-key", "api-key", "proxy-authorization")
_TEXT_ATTRIBUTES = ("message", "_message", "user_message", "http_body", "body", "detail", "msg", "reason", "text")
_grams_cache: tuple[tuple[str, ...], frozenset[str], tuple[str, ...]] | None = None


def _key_values() -> tuple[str, ...]:
    from .settings import KEY_ENV, SERVER_KEY_ENV

    names = (*KEY_ENV.values(), SERVER_KEY_ENV, *(alias for aliases in ALIASES.values() for alias in aliases))
    return tuple(sorted({v for v in (os.environ.get(n, "").strip() for n in names) if len(v) >= 4}))


def _forms(key: str) -> set[str]:
    """The ways a key shows up in text: raw, escaped by repr/JSON, URL-quoted, base64."""
    import base64
    import json
    from urllib.parse import quote

    raw = key.encode("utf-8", "backslashreplace")
    return {
        key,
        repr(key)[1:-1],
        ascii(key)[1:-1],
        json.dumps(key)[1:-1],
        quote(key, safe=""),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
    }


def _grams() -> tuple[frozenset[str], tuple[str, ...]]:
    """(every FRAGMENT-long run of every form of every key, forms too short to cut into runs)."""
    global _grams_cache
    values = _key_values()
    if _grams_cache is None or _grams_cache[0] != values:
        grams: set[str] = set()
        short: set[str] = set()
        for key in values:
            for form in _forms(key):
                if len(form) >= FRAGMENT:
                    grams.update(form[i : i + FRAGMENT] for i in range(len(form) - FRAGMENT + 1))
                elif len(form) >= 4:
                    short.add(form)
        _grams_cache = (values, frozenset(grams), tuple(sorted(short, key=len, reverse=True)))
    return _grams_cache[1], _grams_cache[2]


def redact(text: str) -> str:
    """Remove any known API key from text bound for an error message, a log or a result.

    Not only the key itself: any run of 8 or more of its characters, in its raw, repr/JSON-escaped,
    URL-quoted or base64 form, so a key cut short, escaped or encoded by some library is caught too.
    """
    if not text:
        return text
    grams, short = _grams()
    for form in short:
        text = text.replace(form, "***")
    if not grams or len(text) < FRAGMENT:
        return text
    spans: list[list[int]] = []
    for i in range(len(text) - FRAGMENT + 1):
        if text[i : i + FRAGMENT] in grams:
            if spans and i <= spans[-1][1]:
                spans[-1][1] = i + FRAGMENT
            else:
                spans.append([i, i + FRAGMENT])
    if not spans:
        return text
    parts, last = [], 0
    for start, stop in spans:
        parts.append(text[last:start])
        parts.append("***")
        last = stop
    parts.append(text[last:])
    return "".join(parts)


def _redact_value(value):
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bytes):
        return redact(value.decode("utf-8", "replace")).encode("utf-8")
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_redact_value(v) for v in value)
    return value


def _scrub_headers(holder) -> None:
    headers = getattr(holder, "headers", None)
    if headers is None:
        return
    try:
        for name in list(headers.keys()):
            if str(name).lower() in AUTH_HEADERS:
                headers[name] = "***"
    except (AttributeError, TypeError):  # immutable header containers: leave them
        pass


def _attribute(obj, name: str):
    try:  # httpx raises RuntimeError for an unset `.request`
        return getattr(obj, name, None)
    except Exception:
        return None


def _requests_of(exc: BaseException) -> list:
    found = [_attribute(exc, "request"), _attribute(_attribute(exc, "response"), "request")]
    return [r for r in found if r is not None]


def scrub_exception(exc: BaseException | None) -> None:
    """Redact keys in place along an exception chain: messages, bodies, and the SDK request objects
    (their auth headers) that the exceptions hold, so no traceback or debugger view shows a key."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        try:
            exc.args = tuple(_redact_value(a) for a in exc.args)
        except (AttributeError, TypeError):
            pass
        for name in _TEXT_ATTRIBUTES:
            try:
                value = exc.__dict__.get(name)
            except AttributeError:
                break
            if isinstance(value, (str, bytes, dict, list, tuple)):
                try:
                    setattr(exc, name, _redact_value(value))
                except (AttributeError, TypeError):
                    pass
        for holder in _requests_of(exc):
            _scrub_headers(holder)
        exc = exc.__cause__ or exc.__context__


def redacted_traceback(exc: BaseException) -> str:
    """The full traceback of `exc` (with its chain), keys redacted."""
    import traceback

    scrub_exception(exc)
    return redact("".join(traceback.format_exception(exc)))

"""API keys from the environment or a `.env` file; a key never appears in an error, log or result."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ..errors import ConfigurationError

_loaded = False
_lock = threading.Lock()


def load_dotenv_once(path: Path | None = None) -> None:
    """Read `.env` (searched upwards from the working directory) once; the environment always wins."""
    global _loaded
    with _lock:
        if _loaded:
            return
        from dotenv import find_dotenv, load_dotenv

        dotenv_path = str(path) if path is not None else find_dotenv(usecwd=True)
        if dotenv_path:
            load_dotenv(dotenv_path, override=False)
        _loaded = True


# Other names the SDKs (and our .env.example) accept for the same key, tried in order.
ALIASES = {"COHERE_API_KEY": ("CO_API_KEY",), "GEMINI_API_KEY": ("GOOGLE_API_KEY",)}  # the SDKs' own names


def require_key(env_var: str) -> str:
    """The key held by `env_var` (or an alias), else ConfigurationError naming the variable, never a value."""
    load_dotenv_once()
    names = (env_var, *ALIASES.get(env_var, ()))
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    shown = " or ".join(names)
    raise ConfigurationError(
        f"missing API key: {shown} is not set",
        f"export {env_var}=... or add it to a .env file in the working directory (see .env.example)",
    )


def redact(text: str) -> str:
    """Remove any known API key from text bound for an error message, a log or a result."""
    from .settings import KEY_ENV

    for env_var in (*KEY_ENV.values(), *(alias for names in ALIASES.values() for alias in names)):
        value = os.environ.get(env_var, "").strip()
        if len(value) >= 4 and value in text:
            text = text.replace(value, "***")
    return text

"""Keys from env or .env (env wins, never echoed); settings defaults, overrides and base URLs."""

from __future__ import annotations

import os

import pytest

from evals_repro.base.errors import ConfigurationError, UsageError
from evals_repro.providers import keys
from evals_repro.providers.settings import provider_settings


@pytest.fixture
def fresh_dotenv(monkeypatch, tmp_path):
    """`.env` read afresh from a temp folder; what it sets in os.environ (behind monkeypatch's back) is undone,
    or a key from it (CO_API_KEY=cohere-dotenv) stayed set for every later test."""
    monkeypatch.setattr(keys, "_loaded", False)
    monkeypatch.chdir(tmp_path)
    saved = dict(os.environ)
    yield tmp_path
    os.environ.clear()
    os.environ.update(saved)


def test_missing_key_names_variable_and_example(fresh_dotenv, monkeypatch):
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    with pytest.raises(ConfigurationError) as info:
        keys.require_key("VOYAGE_API_KEY")
    line = info.value.one_line()
    assert "VOYAGE_API_KEY" in line and ".env.example" in line


def test_dotenv_is_read_but_environment_wins(fresh_dotenv, monkeypatch):
    (fresh_dotenv / ".env").write_text("VOYAGE_API_KEY=from-dotenv\nCO_API_KEY=cohere-dotenv\n")
    monkeypatch.setenv("VOYAGE_API_KEY", "from-env")
    monkeypatch.delenv("CO_API_KEY", raising=False)
    assert keys.require_key("VOYAGE_API_KEY") == "from-env"
    assert keys.require_key("CO_API_KEY") == "cohere-dotenv"


def test_blank_key_counts_as_missing(fresh_dotenv, monkeypatch):
    monkeypatch.setenv("CO_API_KEY", "   ")
    with pytest.raises(ConfigurationError):
        keys.require_key("CO_API_KEY")


def test_redact_removes_key_values(monkeypatch):
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-secret-123")
    assert keys.redact("bad key pa-secret-123 given") == "bad key *** given"


def test_defaults_per_provider(monkeypatch):
    for var in ("VOYAGE_BASE_URL", "CO_API_URL", "GOOGLE_GEMINI_BASE_URL", "MIXEDBREAD_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    voyage = provider_settings("voyage", {})
    assert (voyage.tokens_per_minute, voyage.requests_per_minute) == (3_000_000, 2_000)
    assert voyage.base_url is None and voyage.max_attempts >= 2
    assert provider_settings("cohere").max_batch_items == 96
    assert provider_settings("gemini").max_batch_items == 100
    assert provider_settings("mixedbread").provider == "mixedbread"


def test_options_override_defaults_and_accept_dashes():
    settings = provider_settings(
        "voyage",
        {
            "voyage_tpm": 1000,
            "voyage-rpm": "10",
            "voyage_interval": 0.5,
            "timeout": 7,
            "max_attempts": 2,
            "cohere_tpm": 1,
        },
    )
    assert settings.tokens_per_minute == 1000
    assert settings.requests_per_minute == 10
    assert settings.min_interval == 0.5
    assert settings.timeout == 7.0 and settings.max_attempts == 2


def test_bad_option_is_a_usage_error():
    with pytest.raises(UsageError, match="--voyage-tpm"):
        provider_settings("voyage", {"voyage_tpm": "lots"})
    with pytest.raises(UsageError, match="--max-attempts"):
        provider_settings("voyage", {"max_attempts": 0})
    with pytest.raises(UsageError) as info:
        provider_settings("anthropic", {})
    assert "choose from" in info.value.one_line()


def test_base_urls_read_at_call_time(monkeypatch):
    monkeypatch.setenv("VOYAGE_BASE_URL", "http://127.0.0.1:9/v1/")
    assert provider_settings("voyage").base_url == "http://127.0.0.1:9/v1"
    monkeypatch.setenv("CO_API_URL", "http://127.0.0.1:8")
    assert provider_settings("cohere").base_url == "http://127.0.0.1:8"
    monkeypatch.setenv("CO_API_URL", "")
    assert provider_settings("cohere").base_url is None
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:7")
    monkeypatch.setenv("MIXEDBREAD_BASE_URL", "http://127.0.0.1:6")
    assert provider_settings("gemini").base_url == "http://127.0.0.1:7"
    assert provider_settings("mixedbread").base_url == "http://127.0.0.1:6"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:5/v1/")  # OpenAI-compatible generators
    assert provider_settings("openai").base_url == "http://127.0.0.1:5/v1"


def test_aliases_accepted_and_named(fresh_dotenv, monkeypatch):
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.setenv("CO_API_KEY", "from-alias")  # the cohere SDK's own variable
    assert keys.require_key("COHERE_API_KEY") == "from-alias"
    monkeypatch.delenv("CO_API_KEY")
    with pytest.raises(ConfigurationError) as info:
        keys.require_key("COHERE_API_KEY")
    assert "COHERE_API_KEY or CO_API_KEY" in info.value.one_line()

"""Option groups (cli/groups.py): a command names a group once, typer sees the group's options as its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pytest
import typer
from typer.testing import CliRunner

from evals_repro.cli import app
from evals_repro.cli.groups import GROUP, ApiCalls, OptionGroup, ProviderBudgets, grouped, option


@dataclass
class Window(OptionGroup):
    width: int = option(80, "--width", help="Columns.")
    title: Optional[str] = option(None, "--title", help="A title.")


@dataclass
class Other(OptionGroup):
    width: int = option(1, "--other-width")


def toy_app(seen: list) -> typer.Typer:
    toy = typer.Typer()

    @toy.command()
    @grouped
    def show(name: str = typer.Argument(...), window: Window = GROUP, calls: ApiCalls = GROUP) -> None:
        seen.append((name, window, calls))

    return toy


def test_a_group_reaches_the_command_as_one_object_with_the_values_given():
    seen: list = []
    result = CliRunner().invoke(toy_app(seen), ["page", "--width", "120", "--timeout", "7.5"])
    assert result.exit_code == 0, result.output
    ((name, window, calls),) = seen
    assert name == "page"
    assert window == Window(width=120, title=None)
    assert calls == ApiCalls(timeout=7.5, max_attempts=None)
    assert calls.given() == {"timeout": 7.5}  # an option not given stays the library's default
    assert window.given() == {"width": 120}


def test_a_groups_options_are_checked_and_shown_like_the_commands_own():
    seen: list = []
    result = CliRunner().invoke(toy_app(seen), ["page", "--width", "wide"])
    assert result.exit_code == 2 and not seen
    help_text = CliRunner().invoke(toy_app(seen), ["--help"]).output
    for flag in ("--width", "--title", "--timeout", "--max-attempts"):
        assert flag in help_text


def test_an_option_given_twice_through_groups_is_a_programming_error():
    def command(window: Window = GROUP, other: Other = GROUP) -> None: ...

    with pytest.raises(TypeError, match=r"command: option names given twice through its groups: \['width'\]"):
        grouped(command)


def test_provider_budgets_list_each_provider_in_order():
    names = [name for name in ProviderBudgets.__dataclass_fields__]
    assert names == [
        f"{p}_{k}" for p in ("voyage", "cohere", "gemini", "mixedbread") for k in ("tpm", "rpm", "interval")
    ]


def test_run_shows_every_grouped_option_once():
    help_text = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    for flag in (
        "--timeout",
        "--voyage-tpm",
        "--mixedbread-interval",
        "--plan",
        "--max-cost",
        "--prices",
        "--base-url",
        "--openai-interval",
        "--rerank-base-url",
        "--rerank-max-tokens",
    ):
        assert help_text.count(f"{flag} ") == 1, flag

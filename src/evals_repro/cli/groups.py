"""Option groups: options several commands share, declared once and handed to a command as one object.

A group is a dataclass whose fields default to typer options::

    @dataclass
    class Requests(OptionGroup):
        workers: int = typer.Option(4, min=1, help="...")
        timeout: Optional[float] = typer.Option(None, help="...")

A command names the group as one parameter (`requests: Requests = GROUP`) and is decorated with `@grouped`; typer
sees the group's fields as the command's own options (same flags, help and order), and the command body
receives one `Requests` instance. So a command's signature reads as what it does, and an option shared by
several commands is written once.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Optional, TypeVar, get_type_hints

import typer

from .options import MAX_ATTEMPTS_DEFAULT, TIMEOUT_DEFAULT, budget_option

F = TypeVar("F", bound=Callable[..., Any])
# The default a command gives a group parameter (`calls: ApiCalls = GROUP`): `grouped` replaces the parameter
# by the group's options, so this value is never used.
GROUP: Any = None


def option(*args: Any, **kwargs: Any) -> Any:
    """`typer.Option`, typed for a dataclass field default."""
    return typer.Option(*args, **kwargs)


@dataclass
class OptionGroup:
    """Base of every option group (see the module docstring)."""

    def given(self) -> dict[str, Any]:
        """The options the user actually set (None = keep the library's default)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


def grouped(command: F) -> F:
    """Expand each `OptionGroup` parameter of `command` into the group's options, in place, for typer;
    the wrapped command receives the group object."""
    hints = get_type_hints(command)
    parameters: list[inspect.Parameter] = []
    groups: dict[str, type[OptionGroup]] = {}
    for parameter in inspect.signature(command).parameters.values():
        kind = hints.get(parameter.name)
        if isinstance(kind, type) and issubclass(kind, OptionGroup):
            groups[parameter.name] = kind
            member_hints = get_type_hints(kind)
            for member in fields(kind):
                parameters.append(
                    inspect.Parameter(
                        member.name,
                        inspect.Parameter.POSITIONAL_OR_KEYWORD,
                        default=member.default,
                        annotation=member_hints[member.name],
                    )
                )
        else:
            parameters.append(parameter.replace(annotation=hints.get(parameter.name, parameter.annotation)))
    names = [p.name for p in parameters]
    clashes = sorted({name for name in names if names.count(name) > 1})
    if clashes:  # a programming error, caught by the CLI surface tests at import
        raise TypeError(f"{command.__name__}: option names given twice through its groups: {clashes}")

    @functools.wraps(command)
    def wrapper(**values: Any) -> Any:
        for name, kind in groups.items():
            values[name] = kind(**{member.name: values.pop(member.name) for member in fields(kind)})
        return command(**values)

    wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
    return wrapper  # type: ignore[return-value]


@dataclass
class VoyageBudget(OptionGroup):
    voyage_tpm: Optional[int] = budget_option("voyage", "tpm")
    voyage_rpm: Optional[int] = budget_option("voyage", "rpm")
    voyage_interval: Optional[float] = budget_option("voyage", "interval")


@dataclass
class CohereBudget(OptionGroup):
    cohere_tpm: Optional[int] = budget_option("cohere", "tpm")
    cohere_rpm: Optional[int] = budget_option("cohere", "rpm")
    cohere_interval: Optional[float] = budget_option("cohere", "interval")


@dataclass
class GeminiBudget(OptionGroup):
    gemini_tpm: Optional[int] = budget_option("gemini", "tpm")
    gemini_rpm: Optional[int] = budget_option("gemini", "rpm")
    gemini_interval: Optional[float] = budget_option("gemini", "interval")


@dataclass
class MixedbreadBudget(OptionGroup):
    mixedbread_tpm: Optional[int] = budget_option("mixedbread", "tpm")
    mixedbread_rpm: Optional[int] = budget_option("mixedbread", "rpm")
    mixedbread_interval: Optional[float] = budget_option("mixedbread", "interval")


@dataclass
class ProviderBudgets(MixedbreadBudget, GeminiBudget, CohereBudget, VoyageBudget):
    """Every hosted provider's per-minute budgets (fields in Voyage, Cohere, Gemini, Mixedbread order: a
    dataclass lists its bases' fields from the last base to the first)."""


@dataclass
class ApiCalls(OptionGroup):
    """How each hosted API request is made: its timeout and attempts (the library's defaults when not given)."""

    timeout: Optional[float] = option(None, show_default=TIMEOUT_DEFAULT, help="API request timeout in seconds.")
    max_attempts: Optional[int] = option(
        None, "--max-attempts", show_default=MAX_ATTEMPTS_DEFAULT, help="Attempts per API request."
    )


@dataclass
class RerankServer(OptionGroup):
    """`rerank-api:<model>`: the reranking server(s) of your own."""

    rerank_base_url: Optional[str] = option(
        None,
        "--rerank-base-url",
        help="rerank-api:<model>: server URL(s), replicas comma-separated (RERANK_API_BASE_URLS).",
    )
    rerank_endpoint: Optional[str] = option(
        None, "--rerank-endpoint", help="rerank-api: rerank (Cohere/Jina style), score (vLLM) or tei."
    )
    rerank_max_tokens: Optional[int] = option(
        None, "--rerank-max-tokens", help="rerank-api: tokens kept per document (default: what fits the server)."
    )

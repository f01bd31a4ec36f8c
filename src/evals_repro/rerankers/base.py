"""The Reranker protocol: one query and its candidate texts in, one score per candidate out."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..base.usage import Usage
    from ..providers.plan import Plan
    from ..providers.settings import ProviderSettings

ScoredAttempt = tuple[list[float], int | None, int]  # scores, tokens the server reported, documents cut to fit


@runtime_checkable
class Reranker(Protocol):
    name: str  # registry name, e.g. "cohere"
    model: str  # provider model id, e.g. "rerank-v4.0-pro"

    def rerank(self, query: str, documents: list[str]) -> list[float]:
        """Scores aligned with `documents` (input order, not rank order); higher is better.

        Raises ProviderError when the provider fails past the retry policy: never a partial list.
        """
        ...

    def describe(self) -> dict[str, Any]:
        """Settings that change the scores (model, truncation limits), for result files."""
        ...


def rerank_with_retries(
    settings: ProviderSettings,
    usage: Usage,
    documents: int,
    attempt: Callable[[], ScoredAttempt],
    what: str,
    model: str,
) -> list[float]:
    """One call to a reranker on servers of your own, under the retry policy: `documents` counted as
    rerank_documents, the tokens the server reported counted, the documents cut to fit counted as
    rerank_documents_truncated (once, not per try), and the call counted as self-hosted (no price)."""
    from ..providers.retry import call_with_retries

    usage.add("rerank_documents", documents)
    scores, _, cut = call_with_retries(
        settings, attempt, usage=usage, tokens=0, items=1, what=what, reported_tokens=lambda answer: answer[1]
    )
    if cut:
        usage.add("rerank_documents_truncated", cut)
    usage.self_hosted(settings.provider, model)
    return scores


def plan_self_hosted(
    reranker: Any, query_tokens: int, doc_tokens: list[int], plan: Plan, what: str, per_request: int | None
) -> None:
    """A reranker on servers of your own in a plan: its requests (`per_request` documents each; None: all of a
    query's in one), counted and shown as self-hosted, never priced."""
    if not doc_tokens:
        return
    step = per_request or len(doc_tokens)
    plan.add(
        reranker.settings.provider,
        reranker.model,
        what,
        requests=-(-len(doc_tokens) // step),
        items=len(doc_tokens),
        tokens=sum(query_tokens + tokens for tokens in doc_tokens),
        self_hosted=True,
    )


def positive_option(options: dict[str, Any], key: str, default: Any, kind: type = float) -> Any:
    """A reranker's numeric option (`timeout`, `max_attempts`, ...) from the method context: `default` when
    not given, else a positive `kind`; bad input is one line naming the command-line flag."""
    value = options.get(key)
    if value is None:
        return default
    from ..base.errors import UsageError

    flag = "--" + key.replace("_", "-")
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise UsageError(f"{flag} {value!r} is not a number", "give a positive number") from None
    if number <= 0:
        raise UsageError(f"{flag} {value!r} must be positive", "give a positive number")
    return number

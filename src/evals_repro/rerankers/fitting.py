"""How long a text is for a served cross-encoder, measured only where it could matter, and its cut to a limit.

A text whose `token_bound` fits is sent as it is, unmeasured. Only a text whose bound may not fit is measured,
by the best tokenizer there is, in this order: the server's own (`POST /tokenize`: vLLM, TEI), else the model's
`tokenizer.json` from this machine (a local model directory the server names, or the Hugging Face cache: found,
never downloaded), else none. With no tokenizer, a text whose bound exceeds its limit is refused by the caller
(`DocumentTooLong`): it may not fit, and it cannot be cut at exactly N tokens without the model's tokenizer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from ..base.errors import DataError

ADDED_PIECES = 1  # a piece a tokenizer adds before the text: SentencePiece's "▁" prefix, byte-level BPE's prefix space
FULL_SHA = re.compile(r"[0-9a-f]{40}")


@lru_cache(maxsize=65536)
def _width(char: str) -> int:
    """The most UTF-8 bytes `char` becomes under any normalisation a tokenizer applies (see `token_bound`)."""
    lower = char.lower()
    forms = (
        char,
        unicodedata.normalize("NFD", char),
        unicodedata.normalize("NFKD", char),
        unicodedata.normalize("NFKD", lower),
        unicodedata.normalize("NFKD", char).lower(),
    )
    return max(len(form.encode("utf-8")) for form in forms)


def token_bound(text: str) -> int:
    """At most this many tokens, special tokens aside, for `text` under any tokenizer in use.

    Why it holds: a tokenizer normalises the text (nothing, NFC, NFD, NFKC or NFKD, perhaps lower-cased), then
    cuts it into tokens that each cover at least one character of the normalised text (WordPiece, Unigram,
    SentencePiece, whose "▁" standing for a space is a piece of its own; an unknown word or character is one
    token) or exactly one of its UTF-8 bytes (byte-level BPE: GPT-2, RoBERTa, Qwen; SentencePiece's byte
    fallback: Llama), and may add one piece in front (`ADDED_PIECES`). A character is at least one byte, so
    tokens <= the normalised text's UTF-8 bytes + 1. Normalising can lengthen a text: NFD turns é (2 bytes)
    into e and a combining accent (3); NFKC turns U+FDFA (3 bytes) into 18 characters (33 bytes); lower-casing
    turns İ (2) into i and a combining dot (3). So each character counts its longest form (itself, NFD, NFKD,
    NFKD of its lower case, lower case of its NFKD): decomposing and lower-casing work character by character,
    and composing (NFC, NFKC) only shortens, so the sum bounds every normalised form of the whole text.
    ASCII is its own length under all of them."""
    if text.isascii():
        return len(text) + ADDED_PIECES
    return sum(map(_width, text)) + ADDED_PIECES


class LocalTokenizer:
    """A model's `tokenizer.json` (HF `tokenizers`), for counting and cutting a document without special tokens."""

    def __init__(self, path: Path, source: str) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(path))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.source = source  # what describe() records: where the file came from

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def fit(self, text: str, limit: int) -> tuple[str, bool]:
        """`text` if it counts at most `limit` tokens, else its longest prefix ending at one of its first `limit`
        tokens that itself counts at most `limit` (a token split inside a character, or merged otherwise once
        cut, is dropped with what follows it)."""
        offsets = self.tokenizer.encode(text, add_special_tokens=False).offsets
        if len(offsets) <= limit:
            return text, False
        for kept in range(limit, 0, -1):
            head = text[: offsets[kept - 1][1]]
            if self.count(head) <= limit:
                return head, True
        return "", True


def _candidates(model: str, identity: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(repo or directory, revision) the served model's tokenizer may be found under, most specific first."""
    name, _, pinned = model.partition("@")
    revision = pinned if FULL_SHA.fullmatch(pinned) else None
    found = identity.get("revision")
    if revision is None and isinstance(found, str) and FULL_SHA.fullmatch(found):
        revision = found
    places: list[tuple[str, str | None]] = []
    for place in (identity.get("root"), name, identity.get("id")):
        if isinstance(place, str) and place:
            place = place.partition("@")[0] if not place.startswith("/") else place
            if (place, revision) not in places:
                places.append((place, revision))
    return places


def find_local_tokenizer(model: str, identity: dict[str, Any]) -> LocalTokenizer | None:
    """The served model's tokenizer.json on this machine, or None: a directory the server names as its model
    (vLLM's `root` when it was started from a path), else the Hugging Face cache at the served revision (the
    current `main` when the server names none). Never a download: a cache miss is None."""
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        return None
    from huggingface_hub import constants, try_to_load_from_cache

    for place, revision in _candidates(model, identity):
        local = Path(place) / "tokenizer.json"
        if place.startswith("/"):
            if local.is_file():
                return LocalTokenizer(local, f"{local} (the server's model directory)")
            continue
        if place.count("/") != 1:
            continue
        try:
            cached = try_to_load_from_cache(
                place, "tokenizer.json", cache_dir=constants.HF_HUB_CACHE, revision=revision
            )
        except Exception:  # noqa: BLE001 - an unusual name or a damaged cache is only "not found here"
            continue
        if isinstance(cached, str) and Path(cached).is_file():
            at = revision or "main"
            return LocalTokenizer(Path(cached), f"tokenizer.json of {place}@{at} in the local Hugging Face cache")
    return None


class Measurer(Protocol):
    """A tokenizer of the served model: the server's (`/tokenize`) or a `LocalTokenizer`."""

    source: str  # how lengths are measured, for describe()

    def count(self, text: str) -> int: ...

    def fit(self, text: str, limit: int) -> tuple[str, bool]:
        """`text` cut at its end to at most `limit` tokens, and whether it was cut."""
        ...


@dataclass(frozen=True)
class Limits:
    """A document's limit: at most `max_tokens` (--rerank-max-tokens) and what fits `context` beside the query
    and the pair's special tokens; either may be None (not given, not reported)."""

    max_tokens: int | None
    context: int | None
    pair_tokens: int

    def allowance(self, query_tokens: int) -> int:
        room = None if self.context is None else self.context - query_tokens - self.pair_tokens
        if room is None:
            assert self.max_tokens is not None
            return self.max_tokens
        return room if self.max_tokens is None else min(self.max_tokens, room)


class DocumentTooLong(DataError):
    """A document that may not fit and cannot be measured or cut. It names the document by its place among the
    call's documents; a caller that knows the page (`RerankedRetriever`) names it with `named`."""

    def __init__(self, what: str, index: int, label: str, detail: str, hint: str) -> None:
        super().__init__(f"{what}: {label} {detail}", hint)
        self.what, self.index, self.detail = what, index, detail

    def named(self, label: str) -> DataError:
        return DataError(f"{self.what}: {label} {self.detail}", self.hint)


def fit_documents(
    what: str,
    query: str,
    documents: list[str],
    limits: Limits,
    measurer: Measurer | None,
    map_: Callable[[Callable[[str], tuple[str, bool]], list[str]], Any] = map,
    no_tokenizer_hint: str = "",
) -> tuple[list[str], int]:
    """The documents as sent (each cut at its end to its limit) and how many were cut. Nothing is measured while
    every bound fits; then the query once, then only the documents whose bound still does not fit."""
    query_bound = token_bound(query) if limits.context is not None else 0
    optimistic = limits.allowance(query_bound)
    if all(token_bound(d) <= optimistic for d in documents):
        return list(documents), 0
    query_tokens, exact = query_bound, False
    if measurer is not None and limits.context is not None:
        query_tokens, exact = measurer.count(query), True
    allowance = limits.allowance(query_tokens)
    if allowance < 1:
        taken = f"takes {query_tokens:,}" if exact else f"may take up to {query_tokens:,} (its bound)"
        raise DataError(
            f"{what}: the query {taken} tokens, leaving no room for a document in the {limits.context:,}-token context",
            "shorten the query (only documents are cut)",
        )
    if measurer is None:
        for index, document in enumerate(documents):
            bound = token_bound(document)
            if bound > allowance:
                raise too_long(
                    what, index, len(documents), document, bound, allowance, limits, query_tokens, no_tokenizer_hint
                )
        return list(documents), 0

    def fit(document: str) -> tuple[str, bool]:
        if token_bound(document) <= allowance:
            return document, False
        return measurer.fit(document, allowance)

    fitted = list(map_(fit, documents))
    return [text for text, _ in fitted], sum(1 for _, cut in fitted if cut)


def too_long(
    what: str, index: int, count: int, document: str, bound: int, allowance: int, limits: Limits, query: int, hint: str
) -> DocumentTooLong:
    """The refusal of a document whose bound exceeds its allowance when there is no tokenizer to measure it."""
    by_context = limits.context is not None and (limits.max_tokens is None or allowance < limits.max_tokens)
    if by_context:
        why = f"the {limits.context:,}-token context less the query's bound of {query:,} and {limits.pair_tokens} special tokens"
    else:
        why = "--rerank-max-tokens"
        hint += "; or raise --rerank-max-tokens"
    opening = " ".join(document.split())[:40]
    return DocumentTooLong(
        what,
        index,
        f"document {index + 1} of {count} ('{opening}...', {len(document):,} characters)",
        f"may take up to {bound:,} tokens (its UTF-8 bound), more than the {allowance:,} it may have ({why}), and "
        "without the model's tokenizer it cannot be measured or cut",
        hint,
    )

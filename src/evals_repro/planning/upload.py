"""`mixedbread-upload --plan`: the uploads and attachments still to make and what indexing them bills."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..base.errors import ConfigurationError
from ..providers.batching import estimate_tokens
from ..providers.plan import Guess, Plan, low_tokens
from ..providers.prices import current_prices, usd_text
from ..providers.settings import provider_settings
from ..stores.common import STORE_MODEL, default_prefix, indexing_units, page_payload, store_name
from ..stores.journal import UploadJournal
from ..stores.upload import stored_path

JOURNALS = "mixedbread-uploads"


def _stored(path: Path) -> dict[str, str]:
    try:
        pages = json.loads(path.read_text("utf-8")).get("pages", {})
        return {str(k): str(v) for k, v in pages.items()}
    except (OSError, ValueError, AttributeError):
        return {}


def _text_guess(payload: Any, units: dict[str, float]) -> Guess | None:
    """A text page's indexing tokens as a first guess with its range (None for an image page: one page billed)."""
    if not payload.mime_type.startswith("text/"):
        return None
    text = payload.data.decode("utf-8", errors="replace")
    point = int(sum(units.values()))
    return Guess(max(1, math.ceil(low_tokens(text))), point, max(point, estimate_tokens(text)))


def plan_upload(
    benchmark: str,
    content: str,
    subsets: list[str] | None = None,
    *,
    parsing: str = "fast",
    store_prefix: str | None = None,
    options: dict[str, Any] | None = None,
    cache_dir: Path = Path("cache"),
) -> Plan:
    """Per subset: pages whose bytes the store already holds (as the last upload left it) or that an interrupted
    upload sent (attached, not sent again) are held; the rest are one upload and one attachment each."""
    from ..benchmarks.declaration import LoadOptions
    from ..benchmarks.registry import get_benchmark, load_subset, resolve_subsets

    decl = get_benchmark(benchmark)
    settings = provider_settings("mixedbread", options or {})
    prefix = store_prefix or default_prefix(decl.name)
    journals = Path(cache_dir) / JOURNALS
    plan = Plan()
    storage_tokens = 0.0
    names = resolve_subsets(decl, subsets)
    plan.scope(len(names))
    for name in names:
        try:  # downloaded if not cached yet, as the upload would (public data: free)
            subset = load_subset(decl, name, LoadOptions(content=content))
        except ConfigurationError as exc:  # the Hub unreachable, offline with nothing cached, no token
            plan.cannot_see(name, f"its data could not be loaded ({exc.one_line()})")
            continue  # data that is here but broken is refused as the upload refuses it (one line, exit 2)
        store = store_name(prefix, subset.name, content)
        stored = _stored(stored_path(journals, store))
        uploads, _ = UploadJournal(journals / f"{store}.jsonl").outstanding()
        sent = {(u.page, u.sha256) for u in uploads}
        for page in subset.pages:
            payload = page_payload(page, content)
            if payload is None:
                continue
            units = indexing_units(payload, parsing)
            storage_tokens += units.get("store_tokens", 0) + units.get("store_tokens_high_quality", 0)
            if stored.get(page.id) == payload.digest:
                plan.add("mixedbread", STORE_MODEL, "upload", held=1)
                continue
            requests = 1 if (page.id, payload.digest) in sent else 2  # an earlier upload is only attached
            guess = _text_guess(payload, units)
            plan.add(
                "mixedbread",
                STORE_MODEL,
                "upload",
                requests=requests,
                items=1,
                tokens=guess or 0,
                units=units,
                units_range=None if guess is None else ({u: guess.low for u in units}, {u: guess.high for u in units}),
                settings=settings,
            )
    if plan.guessed:
        plan.note(
            "store tokens are a first guess, at 0.75 words a token, in a range from a token a word to 3 characters "
            "a token (Mixedbread reports no count, so no run can calibrate it; uploads record the point); "
            "--max-cost holds the plan to the top of the range"
        )
    plan.note(
        "plus, per store, a lookup, file listings and processing polls (not billed); pages are counted as held "
        "from what the last upload left in the store (listing the store itself needs the key)"
    )
    price = current_prices().price("mixedbread", STORE_MODEL, "store_token_months")
    if storage_tokens and price is not None:
        plan.note(
            f"storage: about {storage_tokens:,.0f} tokens of text, {usd_text(price.cost(storage_tokens))} per month "
            "while the stores are kept (not in the cost above)"
        )
    return plan

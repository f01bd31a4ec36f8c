"""`mixedbread-upload`: one store per subset, one store file per page, resumable after a crash.

Resuming works from the store itself: its files are listed first, and a page already there
(same page id, same bytes) is skipped, or only waited for when it is still processing. A crash
can leave at most an unattached upload in the Files API, never a duplicate page in the store.
Pages are uploaded first, then their processing is polled through the paginated file listing
(up to 100 files a request), so slow processing never holds an upload worker.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..data import Page, Subset
from ..errors import ConfigurationError, ProviderError, UsageError, choices
from ..progress import progress_bar
from ..usage import Usage
from .common import (
    PARSING,
    TERMINAL,
    Call,
    Payload,
    find_store,
    list_store_files,
    page_metadata,
    page_payload,
    retrying,
    store_name,
)

POLL_TIMEOUT = 900.0  # seconds one page may stay in processing before it is reported
POLL_INTERVAL = 5.0  # seconds between listings of the store while pages process


@dataclass
class UploadSummary:
    store: str
    pages: int
    uploaded: int = 0
    skipped: int = 0
    no_content: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # page id -> reason

    def counts(self) -> str:
        return f"{self.uploaded} uploaded, {self.skipped} already present, {len(self.failed)} failed"

    def line(self) -> str:
        text = f"store {self.store}: {self.pages} pages, {self.counts()}"
        if self.no_content:
            text += f", {self.no_content} without content (not uploaded)"
        return text


@dataclass
class StoreUploader:
    """Uploads one subset's pages into its store; `run()` returns the summary."""

    client: Any
    settings: Any
    usage: Usage
    benchmark: str
    content: str
    prefix: str
    parsing: str = "fast"
    workers: int = 4
    poll_timeout: float = POLL_TIMEOUT
    poll_interval: float = POLL_INTERVAL
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        if self.parsing not in PARSING:
            raise UsageError(f"unknown --parsing '{self.parsing}'", f"choose from {choices(PARSING)}")
        if self.workers < 1:
            raise UsageError(f"--workers {self.workers} must be at least 1", "use --workers 4")
        self.call: Call = retrying(self.settings, self.usage)

    def ensure_store(self, subset: Subset) -> Any:
        name = store_name(self.prefix, subset.name, self.content)
        store = find_store(self.client, self.call, name)
        if store is None:
            metadata = {
                "benchmark": self.benchmark,
                "subset": subset.name,
                "content": self.content,
                "parsing": self.parsing,
            }
            return self.call(
                lambda: self.client.stores.create(
                    name=name,
                    description=f"evals-repro {self.benchmark}/{subset.name} ({self.content})",
                    metadata=metadata,
                ),
                f"store creation {name}",
            )
        if getattr(store, "status", None) == "expired":
            raise ConfigurationError(f"store {name} has expired", "delete it or upload under another --store-prefix")
        recorded = (store.metadata or {}).get("parsing") if isinstance(store.metadata, dict) else None
        if recorded and recorded != self.parsing:
            raise UsageError(
                f"store {name} was uploaded with --parsing {recorded}, not {self.parsing}",
                f"rerun with --parsing {recorded}, or choose another --store-prefix",
            )
        return store

    def run(self, subset: Subset) -> UploadSummary:
        store = self.ensure_store(subset)
        existing = list_store_files(self.client, self.call, store.id)
        summary = UploadSummary(store.name, len(subset.pages))
        work: list[tuple[Page, Payload]] = []
        waiting: dict[str, str] = {}  # page id -> store file id, until processing ends
        for page in subset.pages:
            payload = page_payload(page, self.content)
            if payload is None:
                summary.no_content += 1
                continue
            entry = existing.get(page.id)
            metadata = entry.metadata if entry is not None and isinstance(entry.metadata, dict) else {}
            same = entry is not None and metadata.get("sha256") == payload.digest
            if entry is not None and same and entry.status == "completed":
                summary.skipped += 1
                continue
            if entry is not None and same and entry.status not in TERMINAL:
                waiting[page.id] = entry.id  # still processing from an earlier run: only wait for it
            else:
                work.append((page, payload))  # new, failed, cancelled or changed: upload (again)
        self._upload_all(store, work, existing, waiting, summary)
        self._wait_all(store, waiting, summary)
        return summary

    def _upload_all(
        self,
        store: Any,
        work: list[tuple[Page, Payload]],
        existing: dict[str, Any],
        waiting: dict[str, str],
        summary: UploadSummary,
    ) -> None:
        """Upload and attach every page, `workers` at a time; processing is awaited afterwards, for all at once."""

        def one(item: tuple[Page, Payload]) -> tuple[str, str | None, str | None]:
            page, payload = item
            try:
                return page.id, self._upload(store.id, page, payload, overwrite=page.id in existing), None
            except ProviderError as exc:
                return page.id, None, exc.one_line()

        with progress_bar(f"upload {store.name}", len(work)) as bar:
            pool = ThreadPoolExecutor(max_workers=self.workers)
            try:
                for page_id, file_id, error in pool.map(one, work):
                    if file_id is not None:
                        waiting[page_id] = file_id
                    else:
                        summary.failed[page_id] = error or "upload failed"
                    bar.advance()
                    bar.describe(f"upload {store.name}: {len(waiting)} sent, {len(summary.failed)} failed")
            finally:  # a crash or Ctrl-C stops queued pages; the store keeps what was attached
                pool.shutdown(wait=True, cancel_futures=True)

    def _wait_all(self, store: Any, waiting: dict[str, str], summary: UploadSummary) -> None:
        """Poll the store's file listing (100 files a request) until every page is done or the timeout hits."""
        deadline = self.clock() + self.poll_timeout
        with progress_bar(f"processing {store.name}", len(waiting)) as bar:
            while waiting:
                listing = list_store_files(self.client, self.call, store.id)
                for page_id, file_id in list(waiting.items()):
                    item = listing.get(page_id)
                    if item is None or item.id != file_id or item.status not in TERMINAL:
                        continue
                    del waiting[page_id]
                    if item.status == "completed":
                        summary.uploaded += 1
                    else:
                        error = getattr(item, "last_error", None)
                        message = error.get("message") if isinstance(error, dict) else error
                        summary.failed[page_id] = f"{item.status}: {message or 'no reason given'}"
                    bar.advance()
                bar.describe(f"processing {store.name}: {summary.counts()}")
                if waiting and self.clock() >= deadline:
                    for page_id in waiting:
                        summary.failed[page_id] = (
                            f"still processing after {self.poll_timeout:g}s; rerun the upload to keep waiting"
                        )
                    return
                if waiting:
                    self.sleep(self.poll_interval)

    def _upload(self, store_id: str, page: Page, payload: Payload, overwrite: bool) -> str:
        upload = self.call(
            lambda: self.client.files.create(file=(payload.filename, payload.data, payload.mime_type)),
            f"file upload {page.id}",
        )
        attached = self.call(
            lambda: self.client.stores.files.create(
                store_id,
                file_id=upload.id,
                external_id=page.id,
                metadata=page_metadata(page, payload),
                config={"parsing_strategy": self.parsing},
                overwrite=overwrite,
            ),
            f"store file {page.id}",
        )
        self.usage.add("mixedbread_bytes_uploaded", len(payload.data))
        return attached.id


def upload_benchmark(
    benchmark: str,
    content: str,
    subsets: list[str] | None = None,
    *,
    parsing: str = "fast",
    workers: int = 4,
    store_prefix: str | None = None,
    options: dict[str, Any] | None = None,
    usage: Usage | None = None,
    client: Any = None,
) -> list[UploadSummary]:
    """Upload every requested subset of a benchmark; the CLI prints the summaries."""
    from ..benchmarks.declaration import LoadOptions
    from ..benchmarks.registry import get_benchmark, load_subset, resolve_subsets
    from ..providers.clients import mixedbread_client
    from ..providers.settings import provider_settings
    from .common import default_prefix

    decl = get_benchmark(benchmark)
    names = resolve_subsets(decl, subsets)
    settings = provider_settings("mixedbread", options or {})
    client = client if client is not None else mixedbread_client(settings)
    usage = usage if usage is not None else Usage()
    uploader = StoreUploader(
        client,
        settings,
        usage,
        decl.name,
        content,
        store_prefix or default_prefix(decl.name),
        parsing=parsing,
        workers=workers,
    )
    summaries = []
    for name in names:
        subset = load_subset(decl, name, LoadOptions(content=content))
        summaries.append(uploader.run(subset))
    return summaries

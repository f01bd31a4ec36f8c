"""`mixedbread-upload`: one store per subset, one store file per page, resumable after a crash.

Resuming works from the store itself: its files are listed first, and a page already there
(same page id, same bytes) is skipped, or only polled when it is still processing. A crash can
leave at most an unattached upload in the Files API, never a duplicate page in the store.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from ..data import Page, Subset
from ..errors import ConfigurationError, ProviderError, UsageError, choices
from ..progress import progress_bar
from ..usage import Usage
from .common import (PARSING, TERMINAL, Call, Payload, find_store, list_store_files, page_metadata, page_payload,
                     retrying, store_name)

POLL_TIMEOUT = 900.0  # seconds one page may stay in processing before it is reported
POLL_INTERVAL = 2.0


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
            metadata = {"benchmark": self.benchmark, "subset": subset.name, "content": self.content,
                        "parsing": self.parsing}
            return self.call(lambda: self.client.stores.create(
                name=name, description=f"evals-repro {self.benchmark}/{subset.name} ({self.content})",
                metadata=metadata), f"store creation {name}")
        if getattr(store, "status", None) == "expired":
            raise ConfigurationError(f"store {name} has expired", "delete it or upload under another --store-prefix")
        recorded = (store.metadata or {}).get("parsing") if isinstance(store.metadata, dict) else None
        if recorded and recorded != self.parsing:
            raise UsageError(f"store {name} was uploaded with --parsing {recorded}, not {self.parsing}",
                             f"rerun with --parsing {recorded}, or choose another --store-prefix")
        return store

    def run(self, subset: Subset) -> UploadSummary:
        store = self.ensure_store(subset)
        existing = list_store_files(self.client, self.call, store.id)
        summary = UploadSummary(store.name, len(subset.pages))
        work: list[tuple[Page, Payload, Any]] = []
        for page in subset.pages:
            payload = page_payload(page, self.content)
            if payload is None:
                summary.no_content += 1
                continue
            entry = existing.get(page.id)
            same = entry is not None and (entry.metadata or {}).get("sha256") == payload.digest
            if same and entry.status == "completed":
                summary.skipped += 1
                continue
            # Still processing from an earlier run: only poll it. Failed, cancelled or changed: upload again.
            work.append((page, payload, entry if same and entry.status not in TERMINAL else None))
        lock = threading.Lock()
        with progress_bar(f"upload {store.name}", len(work)) as bar:
            pool = ThreadPoolExecutor(max_workers=self.workers)
            try:
                for page_id, error in pool.map(lambda item: self._one(store.id, existing, *item), work):
                    with lock:
                        if error is None:
                            summary.uploaded += 1
                        else:
                            summary.failed[page_id] = error
                        bar.advance()
                        bar.describe(f"upload {store.name}: {summary.counts()}")
            finally:  # a crash or Ctrl-C stops queued pages; the store keeps what finished
                pool.shutdown(wait=True, cancel_futures=True)
        return summary

    def _one(self, store_id: str, existing: dict[str, Any], page: Page, payload: Payload,
             processing: Any) -> tuple[str, str | None]:
        """Upload (or keep polling) one page; (page id, None) when it completed, else the reason."""
        try:
            if processing is not None:
                file_id = processing.id
            else:
                file_id = self._upload(store_id, page, payload, overwrite=page.id in existing)
            item = self._poll(store_id, file_id)
        except ProviderError as exc:
            return page.id, exc.one_line()
        if item.status == "completed":
            return page.id, None
        if item.status in TERMINAL:
            error = getattr(item, "last_error", None)
            message = error.get("message") if isinstance(error, dict) else error
            return page.id, f"{item.status}: {message or 'no reason given'}"
        return page.id, f"still {item.status} after {self.poll_timeout:g}s; rerun the upload to keep waiting"

    def _upload(self, store_id: str, page: Page, payload: Payload, overwrite: bool) -> str:
        upload = self.call(lambda: self.client.files.create(file=(payload.filename, payload.data, payload.mime_type)),
                           f"file upload {page.id}")
        attached = self.call(lambda: self.client.stores.files.create(
            store_id, file_id=upload.id, external_id=page.id, metadata=page_metadata(page, payload),
            config={"parsing_strategy": self.parsing}, overwrite=overwrite), f"store file {page.id}")
        self.usage.add("mixedbread_bytes_uploaded", len(payload.data))
        return attached.id

    def _poll(self, store_id: str, file_id: str) -> Any:
        deadline = self.clock() + self.poll_timeout
        while True:
            item = self.call(lambda: self.client.stores.files.retrieve(file_id, store_identifier=store_id),
                             "store file status")
            if item.status in TERMINAL or self.clock() >= deadline:
                return item
            self.sleep(self.poll_interval)


def upload_benchmark(benchmark: str, content: str, subsets: list[str] | None = None, *, parsing: str = "fast",
                     workers: int = 4, store_prefix: str | None = None, options: dict[str, Any] | None = None,
                     usage: Usage | None = None, client: Any = None) -> list[UploadSummary]:
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
    uploader = StoreUploader(client, settings, usage, decl.name, content, store_prefix or default_prefix(decl.name),
                             parsing=parsing, workers=workers)
    summaries = []
    for name in names:
        subset = load_subset(decl, name, LoadOptions(content=content))
        summaries.append(uploader.run(subset))
    return summaries

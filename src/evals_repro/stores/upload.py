"""`mixedbread-upload`: one store per subset, one store file per page, resumable after a crash.

Resuming works from the store itself: its files are listed first, and a page already there
(same page id, same bytes) is skipped, or only waited for when it is still processing. A crash
can leave at most an unattached upload in the Files API, never a duplicate page in the store;
the upload journal (`journal.py`) finds such uploads on resume and attaches them (their page still
needs those bytes) or deletes them. Pages are uploaded first, then their processing is polled
through the paginated file listing (up to 100 files a request), so slow processing never holds an
upload worker. The summary tells apart pages uploaded now, uploads of an interrupted run attached
now, pages an earlier run uploaded that only finished processing now, and pages already there.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.data import Page, Subset
from ..base.errors import ConfigurationError, ProviderError, UsageError, choices
from ..base.io import atomic_write_json
from ..base.progress import progress_bar
from ..base.usage import Usage
from .common import (
    PARSING,
    TERMINAL,
    Call,
    Payload,
    find_store,
    indexing_units,
    list_store_files,
    page_metadata,
    page_payload,
    retrying,
    store_name,
)
from .journal import RECENT, Sending, Upload, UploadJournal

POLL_TIMEOUT = 900.0  # seconds one page may stay in processing before it is reported
POLL_INTERVAL = 5.0  # seconds between listings of the store while pages process


def stored_path(journal_dir: Path, store: str) -> Path:
    """`<cache dir>/mixedbread-uploads/<store>.stored.json`: page id -> sha256 of every page the last upload
    left processed in the store (a plan reads it: listing the store itself needs the key)."""
    return Path(journal_dir) / f"{store}.stored.json"


@dataclass
class UploadSummary:
    store: str
    pages: int
    uploaded: int = 0  # sent by this run and processed
    skipped: int = 0  # already in the store, processed, before this run
    finished: int = 0  # sent by an earlier run; this run only waited for their processing
    resumed: int = 0  # uploaded by an interrupted run but never attached; attached by this run
    orphans_deleted: int = 0  # uploads of an interrupted run no page needed any more
    no_content: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # page id -> reason

    def counts(self) -> str:
        text = f"{self.uploaded} uploaded, {self.skipped} already present, {len(self.failed)} failed"
        if self.finished:
            text += f", {self.finished} finished processing (sent by an earlier run)"
        if self.resumed:
            text += f", {self.resumed} attached from an interrupted upload"
        return text

    def line(self) -> str:
        text = f"store {self.store}: {self.pages} pages, {self.counts()}"
        if self.no_content:
            text += f", {self.no_content} without content (not uploaded)"
        if self.orphans_deleted:
            text += f"; {self.orphans_deleted} unattached upload(s) of an interrupted run deleted"
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
    journal_dir: Path | None = None  # where upload journals live (None: no journal, orphans not tracked)

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
        attached_ids: set[str] = set()
        existing = list_store_files(self.client, self.call, store.id, all_ids=attached_ids)
        summary = UploadSummary(store.name, len(subset.pages))
        journal = UploadJournal(self.journal_dir / f"{store.name}.jsonl") if self.journal_dir is not None else None
        uploads, sends = journal.outstanding() if journal is not None else ([], [])
        orphans = {(u.page, u.sha256): u for u in uploads if u.file_id not in attached_ids}
        unanswered = {(s.page, s.sha256): s for s in sends}
        work: list[tuple[Page, Payload, str | None]] = []  # (page, payload, an earlier upload to attach)
        waiting: dict[str, str] = {}  # page id -> store file id, until processing ends
        digests: dict[str, str] = {}  # page id -> sha256 of the bytes the store must hold
        for page in subset.pages:
            payload = page_payload(page, self.content)
            if payload is None:
                summary.no_content += 1
                continue
            digests[page.id] = payload.digest
            entry = existing.get(page.id)
            metadata = entry.metadata if entry is not None and isinstance(entry.metadata, dict) else {}
            same = entry is not None and metadata.get("sha256") == payload.digest
            if entry is not None and same and entry.status == "completed":
                summary.skipped += 1
                continue
            if entry is not None and same and entry.status not in TERMINAL:
                waiting[page.id] = entry.id  # still processing from an earlier run: only wait for it
                continue
            # new, failed, cancelled or changed: attach an interrupted run's upload of these bytes, or upload
            key = (page.id, payload.digest)
            earlier = orphans.pop(key, None)
            file_id = earlier.file_id if earlier is not None else None
            if file_id is None and key in unanswered:
                file_id = self._find_upload(unanswered.pop(key), attached_ids | {u.file_id for u in uploads})
            work.append((page, payload, file_id))
        unresolved = self._discard(journal, list(orphans.values()), list(unanswered.values()), attached_ids, summary)
        sent_now: set[str] = set()
        resumed: set[str] = set()
        unresolved += self._upload_all(store, work, existing, waiting, summary, journal, sent_now, resumed)
        self._wait_all(store, waiting, summary, sent_now, resumed)
        if journal is not None:
            journal.close(finished=unresolved == 0)
        if self.journal_dir is not None:  # what the store holds now, for plans made without a key
            stored = {page_id: digest for page_id, digest in digests.items() if page_id not in summary.failed}
            atomic_write_json(stored_path(self.journal_dir, store.name), {"store": store.name, "pages": stored})
        return summary

    def _find_upload(self, sending: Sending, known: set[str]) -> str | None:
        """The Files API upload a killed run sent without hearing back: same name, size, time and bytes."""
        cursor: str | None = None
        for _ in range(100):  # a bound on the listing; a handful of pages in practice
            kwargs: dict[str, Any] = {"limit": 100, "q": sending.filename}
            if cursor:
                kwargs["after"] = cursor
            page = self.call(functools.partial(self.client.files.list, **kwargs), f"file lookup {sending.page}")
            for item in page.data:
                created = getattr(item, "created_at", None)
                when = created.timestamp() if created is not None and hasattr(created, "timestamp") else None
                if (
                    item.id in known
                    or item.filename != sending.filename
                    or item.bytes != sending.size
                    or (when is not None and when < sending.at - RECENT)
                ):
                    continue
                content = self.call(functools.partial(self._download, item.id), f"file check {sending.page}")
                if hashlib.sha256(content).hexdigest() == sending.sha256:
                    return item.id
            pagination = page.pagination
            if not (pagination and pagination.has_more and pagination.last_cursor) or pagination.last_cursor == cursor:
                return None
            cursor = pagination.last_cursor
        return None

    def _download(self, file_id: str) -> bytes:
        return self.client.files.content(file_id).read()

    def _discard(
        self,
        journal: UploadJournal | None,
        orphans: list[Upload],
        unanswered: list[Sending],
        attached: set[str],
        summary: UploadSummary,
    ) -> int:
        """Delete the uploads of interrupted runs that no page needs any more; returns how many remain."""
        if journal is None:
            return 0
        file_ids = [u.file_id for u in orphans]
        for sending in unanswered:
            found = self._find_upload(sending, attached | set(file_ids))
            if found is not None:
                file_ids.append(found)
        remaining = 0
        for file_id in file_ids:
            try:
                self.call(functools.partial(self.client.files.delete, file_id), f"orphan deletion {file_id}")
            except ProviderError as exc:
                if "HTTP 404" not in exc.message:  # already gone is as good as deleted
                    remaining += 1
                    continue
            journal.deleted(file_id)
            summary.orphans_deleted += 1
        return remaining

    def _upload_all(
        self,
        store: Any,
        work: list[tuple[Page, Payload, str | None]],
        existing: dict[str, Any],
        waiting: dict[str, str],
        summary: UploadSummary,
        journal: UploadJournal | None,
        sent_now: set[str],
        resumed: set[str],
    ) -> int:
        """Upload (or take an earlier upload) and attach every page, `workers` at a time; processing is
        awaited afterwards, for all at once. Returns how many uploads were left unattached."""

        def one(item: tuple[Page, Payload, str | None]) -> tuple[str, str | None, str | None, bool]:
            page, payload, earlier = item
            file_id = earlier
            try:
                if file_id is None:
                    file_id = self._send(page, payload, journal)
                attached = self._attach(store.id, page, payload, file_id, overwrite=page.id in existing)
                return page.id, attached, None, earlier is not None
            except ProviderError as exc:
                return page.id, None, exc.one_line(), file_id is not None

        unattached = 0
        with progress_bar(f"upload {store.name}", len(work)) as bar:
            pool = ThreadPoolExecutor(max_workers=self.workers)
            try:
                for page_id, attached, error, reused in pool.map(one, work):
                    if attached is not None:
                        waiting[page_id] = attached
                        (resumed if reused else sent_now).add(page_id)
                    else:
                        summary.failed[page_id] = error or "upload failed"
                        unattached += 1  # its upload (if any reached the server) stays in the journal
                    bar.advance()
                    bar.describe(f"upload {store.name}: {len(waiting)} sent, {len(summary.failed)} failed")
            finally:  # a crash or Ctrl-C stops queued pages; the store keeps what was attached
                pool.shutdown(wait=True, cancel_futures=True)
        return unattached

    def _wait_all(
        self, store: Any, waiting: dict[str, str], summary: UploadSummary, sent_now: set[str], resumed: set[str]
    ) -> None:
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
                        if page_id in sent_now:
                            summary.uploaded += 1
                        elif page_id in resumed:
                            summary.resumed += 1
                        else:
                            summary.finished += 1
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

    def _send(self, page: Page, payload: Payload, journal: UploadJournal | None) -> str:
        """Upload the page's bytes to the Files API, journaled before and after."""
        if journal is not None:
            journal.sending(page.id, payload.digest, payload.filename, len(payload.data))
        upload = self.call(
            lambda: self.client.files.create(file=(payload.filename, payload.data, payload.mime_type)),
            f"file upload {page.id}",
        )
        if journal is not None:
            journal.uploaded(page.id, payload.digest, upload.id)
        self.usage.add("mixedbread_bytes_uploaded", len(payload.data))
        return upload.id

    def _attach(self, store_id: str, page: Page, payload: Payload, file_id: str, overwrite: bool) -> str:
        attached = self.call(
            lambda: self.client.stores.files.create(
                store_id,
                file_id=file_id,
                external_id=page.id,
                metadata=page_metadata(page, payload),
                config={"parsing_strategy": self.parsing},
                overwrite=overwrite,
            ),
            f"store file {page.id}",
            indexing_units(payload, self.parsing),  # indexing is billed when the file joins the store
        )
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
    cache_dir: Path = Path("cache"),
) -> list[UploadSummary]:
    """Upload every requested subset of a benchmark; the CLI prints the summaries (and `usage`, when given)."""
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
        journal_dir=Path(cache_dir) / "mixedbread-uploads",
    )
    summaries = []
    for name in names:
        subset = load_subset(decl, name, LoadOptions(content=content))
        summaries.append(uploader.run(subset))
    return summaries

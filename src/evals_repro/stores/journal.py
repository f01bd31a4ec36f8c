"""The upload journal: which Files API uploads a killed `mixedbread-upload` may have left unattached.

A page goes to a store in two calls: `files.create` (the bytes go to the Files API) then
`stores.files.create` (the file is attached to the store). A kill between the two leaves a paid-for
upload that no store holds. Each step is appended (flushed and fsynced) to
`<cache dir>/mixedbread-uploads/<store>.jsonl` before and after it happens:

- `sending` (page, sha256, filename, bytes, time) just before an upload;
- `uploaded` (page, sha256, file id) as soon as the Files API answered;
- `deleted` (file id) once an orphan was removed.

On resume, an upload whose file id the store does not hold is an orphan: it is attached if its page
still needs exactly those bytes, else deleted. A `sending` with no `uploaded` (killed while the upload
was in flight: the server may or may not have kept it) is looked up in the Files API by file name,
size and time, and its content is compared before it is attached or deleted. Once nothing is
outstanding the journal is removed.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..base.io import JsonlAppender, read_jsonl

RECENT = 24 * 3600.0  # seconds before a `sending` record that a matching Files API upload may be dated


@dataclass(frozen=True)
class Upload:
    page: str
    sha256: str
    file_id: str


@dataclass(frozen=True)
class Sending:
    page: str
    sha256: str
    filename: str
    size: int
    at: float


class UploadJournal:
    """Append-only record of one store's uploads; thread-safe."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._out: JsonlAppender | None = None

    def _append(self, record: dict) -> None:
        with self._lock:
            if self._out is None:
                self._out = JsonlAppender(self.path)
            self._out.append(record)

    def sending(self, page: str, sha256: str, filename: str, size: int) -> None:
        self._append(
            {"event": "sending", "page": page, "sha256": sha256, "filename": filename, "bytes": size, "at": time.time()}
        )

    def uploaded(self, page: str, sha256: str, file_id: str) -> None:
        self._append({"event": "uploaded", "page": page, "sha256": sha256, "file_id": file_id})

    def deleted(self, file_id: str) -> None:
        self._append({"event": "deleted", "file_id": file_id})

    def outstanding(self) -> tuple[list[Upload], list[Sending]]:
        """(uploads not deleted, in order; sends never answered) from earlier runs."""
        uploads: dict[str, Upload] = {}
        sends: dict[tuple[str, str], Sending] = {}
        for record in read_jsonl(self.path, damaged="set-aside"):
            event = record.get("event")
            if event == "sending":
                key = (str(record["page"]), str(record["sha256"]))
                sends[key] = Sending(*key, str(record["filename"]), int(record["bytes"]), float(record["at"]))
            elif event == "uploaded":
                upload = Upload(str(record["page"]), str(record["sha256"]), str(record["file_id"]))
                uploads[upload.file_id] = upload
                sends.pop((upload.page, upload.sha256), None)
            elif event == "deleted":
                uploads.pop(str(record["file_id"]), None)
        return list(uploads.values()), list(sends.values())

    def close(self, finished: bool) -> None:
        """Stop appending; when nothing is outstanding any more, remove the journal."""
        with self._lock:
            if self._out is not None:
                self._out.close()
                self._out = None
        if finished:
            self.path.unlink(missing_ok=True)

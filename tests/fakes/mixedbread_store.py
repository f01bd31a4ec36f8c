"""Stores routes on the Mixedbread fake: stores, files (multipart), store files whose status
advances when polled, paginated listing, and store search (chunks, optional rerank).

Knobs: `polls_to_complete` (polls before a store file completes), `fail_external_ids` (pages that
end `failed`), `page_size_cap` (server-side cap on list `limit`), `store_status`.
The Files API also lists (`GET /v1/files`, `q` matched against the filename), downloads
(`GET /v1/files/{id}/content`) and deletes (`DELETE /v1/files/{id}`) files; `unattached()` names the
uploads no store holds.
"""

from __future__ import annotations

import itertools
import threading
import time
from email.parser import BytesParser
from email.policy import default as default_policy

from .base import Reply, Request, route
from .mixedbread import FakeMixedbread
from .rerankers import relevance

NOW = "2026-01-01T00:00:00Z"


def _store_json(store: dict) -> dict:
    files = store["files"].values()
    counts = {
        s: sum(1 for f in files if f["status"] == s)
        for s in ("pending", "in_progress", "cancelled", "completed", "failed")
    }
    counts["total"] = len(store["files"])
    return {
        "id": store["id"],
        "name": store["name"],
        "created_at": NOW,
        "updated_at": NOW,
        "object": "store",
        "status": store["status"],
        "file_counts": counts,
        "metadata": store["metadata"],
        "description": store.get("description"),
    }


def _parse_multipart(request: Request) -> tuple[str, str, bytes]:
    raw = b"content-type: " + request.headers["content-type"].encode() + b"\r\n\r\n" + request.body
    message = BytesParser(policy=default_policy).parsebytes(raw)
    for part in message.iter_parts():
        if part.get_param("name", header="content-disposition") == "file":
            return part.get_filename() or "file", part.get_content_type(), part.get_payload(decode=True)
    raise ValueError("no file part")


class FakeMixedbreadStores(FakeMixedbread):
    def __init__(
        self, polls_to_complete: int = 2, fail_external_ids: set[str] | None = None, page_size_cap: int = 100
    ) -> None:
        super().__init__()
        self.polls_to_complete = polls_to_complete
        self.fail_external_ids = set(fail_external_ids or ())
        self.page_size_cap = page_size_cap
        self.stores: dict[str, dict] = {}  # id -> store
        self.files: dict[str, dict] = {}  # Files API id -> {filename, mime_type, data}
        self.rerank_calls: list[dict] = []  # `rerank` options of store searches
        self._ids = itertools.count(1)
        self._state = threading.Lock()

    # -- helpers ------------------------------------------------------------------------
    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):06d}"

    def find_store(self, identifier: str) -> dict | None:
        if identifier in self.stores:
            return self.stores[identifier]
        return next((s for s in self.stores.values() if s["name"] == identifier), None)

    def store_files(self, name: str) -> list[dict]:
        store = self.find_store(name)
        return list(store["files"].values()) if store else []

    def _store_file_json(self, store: dict, entry: dict) -> dict:
        return {
            "id": entry["file_id"],
            "store_id": store["id"],
            "created_at": entry["created_at"],
            "content_url": f"{self.url}/content/{entry['file_id']}",
            "object": "store.file",
            "filename": entry["filename"],
            "metadata": entry["metadata"],
            "external_id": entry["external_id"],
            "status": entry["status"],
            "last_error": entry.get("last_error"),
            "config": entry["config"],
        }

    def _observe(self, entry: dict) -> None:
        """Processing advances each time a client looks at the file (retrieve or list)."""
        if entry["status"] in ("pending", "in_progress"):
            entry["polls"] += 1
            if entry["polls"] >= self.polls_to_complete:
                if entry["external_id"] in self.fail_external_ids:
                    entry["status"], entry["last_error"] = "failed", {"message": "could not parse file"}
                else:
                    entry["status"] = "completed"
            else:
                entry["status"] = "in_progress"

    @staticmethod
    def _missing(what: str) -> Reply:
        return Reply(404, {"detail": f"{what} not found", "message": f"{what} not found"})

    # -- routes -------------------------------------------------------------------------
    @route("POST", r"/v1/stores")
    def create_store(self, request: Request) -> Reply:
        body = request.json
        with self._state:
            if self.find_store(body["name"]) is not None:
                return Reply(409, {"detail": "store name taken"})
            store = {
                "id": self._new_id("vs"),
                "name": body["name"],
                "status": "completed",
                "metadata": body.get("metadata"),
                "description": body.get("description"),
                "files": {},
            }
            self.stores[store["id"]] = store
            return Reply(200, _store_json(store))

    @route("GET", r"/v1/stores/(?P<store>[^/]+)")
    def get_store(self, request: Request) -> Reply:
        store = self.find_store(request.match.groupdict()["store"])
        return Reply(200, _store_json(store)) if store else self._missing("store")

    @route("POST", r"/v1/files")
    def create_file(self, request: Request) -> Reply:
        filename, mime, data = _parse_multipart(request)
        with self._state:
            file_id = self._new_id("file")
            created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            self.files[file_id] = {"filename": filename, "mime_type": mime, "data": data, "created_at": created}
        return Reply(200, self._file_json(file_id))

    def _file_json(self, file_id: str) -> dict:
        upload = self.files[file_id]
        return {
            "id": file_id,
            "filename": upload["filename"],
            "bytes": len(upload["data"]),
            "mime_type": upload["mime_type"],
            "version": 1,
            "created_at": upload.get("created_at", NOW),
            "updated_at": upload.get("created_at", NOW),
        }

    def unattached(self) -> list[str]:
        """Files API ids that no store holds (what a killed upload may leave behind)."""
        held = {key for store in self.stores.values() for key in store["files"]}
        return sorted(set(self.files) - held)

    @route("GET", r"/v1/files")
    def list_files(self, request: Request) -> Reply:
        from urllib.parse import parse_qs, urlsplit

        query = {k: v[-1] for k, v in parse_qs(urlsplit(request.path).query).items()}
        limit = min(int(query.get("limit") or 20), self.page_size_cap)
        with self._state:
            keys = [k for k in self.files if query.get("q", "").lower() in self.files[k]["filename"].lower()]
            start = keys.index(query["after"]) + 1 if query.get("after") in keys else 0
            page = keys[start : start + limit]
            data = [self._file_json(k) for k in page]
        pagination = {
            "has_more": start + limit < len(keys),
            "first_cursor": page[0] if page else None,
            "last_cursor": page[-1] if page else None,
            "total": None,
        }
        return Reply(200, {"object": "list", "data": data, "pagination": pagination})

    @route("GET", r"/v1/files/(?P<file>[^/?]+)/content")
    def file_content(self, request: Request) -> Reply:
        upload = self.files.get(request.match.groupdict()["file"])
        if upload is None:
            return self._missing("file")
        return Reply(200, raw=upload["data"], headers={"Content-Type": upload["mime_type"]})

    @route("DELETE", r"/v1/files/(?P<file>[^/?]+)")
    def delete_file(self, request: Request) -> Reply:
        file_id = request.match.groupdict()["file"]
        with self._state:
            if self.files.pop(file_id, None) is None:
                return self._missing("file")
        return Reply(200, {"id": file_id, "deleted": True, "object": "file"})

    @route("POST", r"/v1/stores/(?P<store>[^/]+)/files")
    def attach(self, request: Request) -> Reply:
        body = request.json
        with self._state:
            store = self.find_store(request.match.groupdict()["store"])
            if store is None:
                return self._missing("store")
            upload = self.files.get(body["file_id"])
            if upload is None:
                return self._missing("file")
            external_id = body.get("external_id")
            same = [k for k, f in store["files"].items() if external_id and f["external_id"] == external_id]
            if same and not body.get("overwrite"):
                return Reply(409, {"detail": f"external_id {external_id} exists", "message": "conflict"})
            for key in same:
                del store["files"][key]
            entry = {
                "file_id": body["file_id"],
                "filename": upload["filename"],
                "external_id": external_id,
                "metadata": body.get("metadata") or {},
                "config": body.get("config") or {},
                "status": "pending",
                "polls": 0,
                "created_at": f"{time.time():.6f}",
                "mime_type": upload["mime_type"],
                "data": upload["data"],
            }
            store["files"][body["file_id"]] = entry
            return Reply(200, self._store_file_json(store, entry))

    @route("GET", r"/v1/stores/(?P<store>[^/]+)/files/(?P<file>[^/?]+)")
    def poll(self, request: Request) -> Reply:
        with self._state:
            store = self.find_store(request.match.groupdict()["store"])
            entry = store["files"].get(request.match.groupdict()["file"]) if store else None
            if entry is None:
                return self._missing("store file")
            self._observe(entry)
            return Reply(200, self._store_file_json(store, entry))

    @route("POST", r"/v1/stores/(?P<store>[^/]+)/files/list")
    def list(self, request: Request) -> Reply:
        body = request.json
        limit = min(int(body.get("limit") or 20), self.page_size_cap)
        with self._state:
            store = self.find_store(request.match.groupdict()["store"])
            if store is None:
                return self._missing("store")
            keys = list(store["files"])
            start = keys.index(body["after"]) + 1 if body.get("after") in keys else 0
            page = keys[start : start + limit]
            has_more = start + limit < len(keys)
            for key in page:
                self._observe(store["files"][key])
            data = [self._store_file_json(store, store["files"][k]) for k in page]
        return Reply(
            200,
            {
                "object": "list",
                "data": data,
                "pagination": {
                    "has_more": has_more,
                    "first_cursor": page[0] if page else None,
                    "last_cursor": page[-1] if page else None,
                    "total": len(keys) if body.get("include_total") else None,
                },
            },
        )

    def _chunks(self, store: dict, entry: dict) -> list[dict]:
        common = {
            "file_id": entry["file_id"],
            "filename": entry["filename"],
            "store_id": store["id"],
            "external_id": entry["external_id"],
            "metadata": entry["metadata"],
            "mime_type": entry["mime_type"],
        }
        if entry["mime_type"].startswith("image/"):
            title = (entry["metadata"] or {}).get("title") or entry["external_id"] or ""
            return [
                dict(
                    common,
                    type="image_url",
                    chunk_index=0,
                    ocr_text=title,
                    image_url={"url": f"{self.url}/img/{entry['file_id']}", "format": "png"},
                )
            ]
        text = entry["data"].decode("utf-8")
        parts = [p for p in text.split("\n\n") if p.strip()] or [text]
        return [dict(common, type="text", chunk_index=i, text=part) for i, part in enumerate(parts)]

    @route("POST", r"/v1/stores/search")
    def search(self, request: Request) -> Reply:
        body = request.json
        query = body["query"] if isinstance(body["query"], str) else body["query"].get("text", "")
        options = body.get("search_options") or {}
        scored = []
        with self._state:
            for identifier in body["store_identifiers"]:
                store = self.find_store(identifier)
                if store is None:
                    return self._missing("store")
                for entry in store["files"].values():
                    if entry["status"] != "completed":
                        continue
                    for chunk in self._chunks(store, entry):
                        content = chunk.get("text") or chunk.get("ocr_text") or ""
                        scored.append(dict(chunk, score=relevance(query, content)))
        scored.sort(key=lambda c: (-c["score"], c["file_id"], c["chunk_index"]))
        hits = scored[: int(body.get("top_k") or 10)]
        rerank = options.get("rerank")
        if rerank:
            self.rerank_calls.append(rerank if isinstance(rerank, dict) else {})
            top = rerank.get("top_k") if isinstance(rerank, dict) else None
            # A listwise reranker: rescore by query-word overlap counted with repeats, then cut.
            for hit in hits:
                content = (hit.get("text") or hit.get("ocr_text") or "").lower()
                hit["score"] = 1.0 + sum(content.count(w) for w in query.lower().split())
            hits.sort(key=lambda c: (-c["score"], c["file_id"]))
            hits = hits[:top] if top else hits
        return Reply(200, {"object": "list", "data": hits})

"""A stateful Mixedbread fake: stores, files (multipart), store files whose status advances when
polled, paginated listing, store search (chunks, optional rerank) and `/v1/reranking`.

Knobs: `polls_to_complete` (polls before a store file completes), `fail_external_ids` (pages that
end `failed`), `page_size_cap` (server-side cap on list `limit`), `store_status`.
"""

from __future__ import annotations

import itertools
import threading
import time
from email.parser import BytesParser
from email.policy import default as default_policy
from typing import Any

from ._http import FakeServer, Request, overlap_score

NOW = "2026-01-01T00:00:00Z"


def _store_json(store: dict) -> dict:
    files = store["files"].values()
    counts = {s: sum(1 for f in files if f["status"] == s)
              for s in ("pending", "in_progress", "cancelled", "completed", "failed")}
    counts["total"] = len(store["files"])
    return {"id": store["id"], "name": store["name"], "created_at": NOW, "updated_at": NOW,
            "object": "store", "status": store["status"], "file_counts": counts,
            "metadata": store["metadata"], "description": store.get("description")}


def _parse_multipart(request: Request) -> tuple[str, str, bytes]:
    raw = b"content-type: " + request.headers["content-type"].encode() + b"\r\n\r\n" + request.body
    message = BytesParser(policy=default_policy).parsebytes(raw)
    for part in message.iter_parts():
        if part.get_param("name", header="content-disposition") == "file":
            return part.get_filename() or "file", part.get_content_type(), part.get_payload(decode=True)
    raise ValueError("no file part")


class MixedbreadStoreFake(FakeServer):
    def __init__(self, polls_to_complete: int = 2, fail_external_ids: set[str] | None = None,
                 page_size_cap: int = 100) -> None:
        super().__init__()
        self.polls_to_complete = polls_to_complete
        self.fail_external_ids = set(fail_external_ids or ())
        self.page_size_cap = page_size_cap
        self.stores: dict[str, dict] = {}  # id -> store
        self.files: dict[str, dict] = {}  # Files API id -> {filename, mime_type, data}
        self.rerank_calls: list[dict] = []
        self._ids = itertools.count(1)
        self._state = threading.Lock()
        self.route("POST", r"/v1/stores", self._create_store)
        self.route("GET", r"/v1/stores/(?P<store>[^/]+)", self._get_store)
        self.route("POST", r"/v1/files", self._create_file)
        self.route("POST", r"/v1/stores/(?P<store>[^/]+)/files", self._attach)
        self.route("POST", r"/v1/stores/(?P<store>[^/]+)/files/list", self._list)
        self.route("GET", r"/v1/stores/(?P<store>[^/]+)/files/(?P<file>[^/]+)", self._poll)
        self.route("POST", r"/v1/stores/search", self._search)
        self.route("POST", r"/v1/reranking", self._rerank)

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
        return {"id": entry["file_id"], "store_id": store["id"], "created_at": entry["created_at"],
                "content_url": f"{self.url}/content/{entry['file_id']}", "object": "store.file",
                "filename": entry["filename"], "metadata": entry["metadata"],
                "external_id": entry["external_id"], "status": entry["status"],
                "last_error": entry.get("last_error"), "config": entry["config"]}

    @staticmethod
    def _missing(what: str) -> tuple[int, Any]:
        return 404, {"detail": f"{what} not found", "message": f"{what} not found"}

    # -- routes -------------------------------------------------------------------------
    def _create_store(self, request: Request) -> tuple[int, Any]:
        body = request.json()
        with self._state:
            if self.find_store(body["name"]) is not None:
                return 409, {"detail": "store name taken"}
            store = {"id": self._new_id("vs"), "name": body["name"], "status": "completed",
                     "metadata": body.get("metadata"), "description": body.get("description"), "files": {}}
            self.stores[store["id"]] = store
            return 200, _store_json(store)

    def _get_store(self, request: Request) -> tuple[int, Any]:
        store = self.find_store(request.params["store"])
        return (200, _store_json(store)) if store else self._missing("store")

    def _create_file(self, request: Request) -> tuple[int, Any]:
        filename, mime, data = _parse_multipart(request)
        with self._state:
            file_id = self._new_id("file")
            self.files[file_id] = {"filename": filename, "mime_type": mime, "data": data}
        return 200, {"id": file_id, "filename": filename, "bytes": len(data), "mime_type": mime,
                     "version": 1, "created_at": NOW, "updated_at": NOW}

    def _attach(self, request: Request) -> tuple[int, Any]:
        body = request.json()
        with self._state:
            store = self.find_store(request.params["store"])
            if store is None:
                return self._missing("store")
            upload = self.files.get(body["file_id"])
            if upload is None:
                return self._missing("file")
            external_id = body.get("external_id")
            same = [k for k, f in store["files"].items() if external_id and f["external_id"] == external_id]
            if same and not body.get("overwrite"):
                return 409, {"detail": f"external_id {external_id} exists", "message": "conflict"}
            for key in same:
                del store["files"][key]
            entry = {"file_id": body["file_id"], "filename": upload["filename"], "external_id": external_id,
                     "metadata": body.get("metadata") or {}, "config": body.get("config") or {},
                     "status": "pending", "polls": 0, "created_at": f"{time.time():.6f}",
                     "mime_type": upload["mime_type"], "data": upload["data"]}
            store["files"][body["file_id"]] = entry
            return 200, self._store_file_json(store, entry)

    def _poll(self, request: Request) -> tuple[int, Any]:
        with self._state:
            store = self.find_store(request.params["store"])
            entry = store["files"].get(request.params["file"]) if store else None
            if entry is None:
                return self._missing("store file")
            if entry["status"] in ("pending", "in_progress"):
                entry["polls"] += 1
                if entry["polls"] >= self.polls_to_complete:
                    if entry["external_id"] in self.fail_external_ids:
                        entry["status"], entry["last_error"] = "failed", {"message": "could not parse file"}
                    else:
                        entry["status"] = "completed"
                else:
                    entry["status"] = "in_progress"
            return 200, self._store_file_json(store, entry)

    def _list(self, request: Request) -> tuple[int, Any]:
        body = request.json()
        limit = min(int(body.get("limit") or 20), self.page_size_cap)
        with self._state:
            store = self.find_store(request.params["store"])
            if store is None:
                return self._missing("store")
            keys = list(store["files"])
            start = keys.index(body["after"]) + 1 if body.get("after") in keys else 0
            page = keys[start:start + limit]
            has_more = start + limit < len(keys)
            data = [self._store_file_json(store, store["files"][k]) for k in page]
        return 200, {"object": "list", "data": data,
                     "pagination": {"has_more": has_more, "first_cursor": page[0] if page else None,
                                    "last_cursor": page[-1] if page else None,
                                    "total": len(keys) if body.get("include_total") else None}}

    def _chunks(self, store: dict, entry: dict) -> list[dict]:
        common = {"file_id": entry["file_id"], "filename": entry["filename"], "store_id": store["id"],
                  "external_id": entry["external_id"], "metadata": entry["metadata"],
                  "mime_type": entry["mime_type"]}
        if entry["mime_type"].startswith("image/"):
            title = (entry["metadata"] or {}).get("title") or entry["external_id"] or ""
            return [dict(common, type="image_url", chunk_index=0, ocr_text=title,
                         image_url={"url": f"{self.url}/img/{entry['file_id']}", "format": "png"})]
        text = entry["data"].decode("utf-8")
        parts = [p for p in text.split("\n\n") if p.strip()] or [text]
        return [dict(common, type="text", chunk_index=i, text=part) for i, part in enumerate(parts)]

    def _search(self, request: Request) -> tuple[int, Any]:
        body = request.json()
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
                        scored.append(dict(chunk, score=overlap_score(query, content)))
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
        return 200, {"object": "list", "data": hits}

    def _rerank(self, request: Request) -> tuple[int, Any]:
        body = request.json()
        documents = body["input"]
        scores = [overlap_score(body["query"], d if isinstance(d, str) else str(d)) for d in documents]
        order = sorted(range(len(documents)), key=lambda i: -scores[i])
        top_k = body.get("top_k") or len(documents)
        data = [{"index": i, "score": scores[i], "object": "rank_result",
                 **({"input": documents[i]} if body.get("return_input") else {})} for i in order[:top_k]]
        tokens = sum(len(str(d).split()) for d in documents)
        return 200, {"usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                     "model": body.get("model") or "mixedbread-ai/mxbai-rerank-large-v2", "data": data,
                     "object": "list", "top_k": top_k, "return_input": bool(body.get("return_input"))}

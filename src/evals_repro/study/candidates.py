"""Frozen first-stage candidates: `candidates/<benchmark>/<subset>.jsonl`, one line per query.

Each line holds the ordered page ids and first-stage scores, the query as the reranker reads it
(text and instruction), its qrels (so the report needs no dataset access), the digest of the
request a reranker is sent (query and candidate texts: `request_digest`) and a digest of the
candidate list itself. `extra` carries what other measures need: nugget judgments
(`subtopics`), an instruction pair's `pair`, `variant` and `changed_docs` (FollowIR). The texts, stored once per
page, live beside it in `<subset>.pages.json`. Both are written atomically once the whole subset
is retrieved.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.io import atomic_write_text, read_jsonl


def digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Candidate:
    benchmark: str
    subset: str
    query_id: str
    query: str
    ids: list[str]
    scores: list[float]
    qrels: dict[str, int]
    request_digest: str
    candidate_digest: str
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def make(
        cls,
        benchmark: str,
        subset: str,
        query_id: str,
        query: str,
        ids: list[str],
        scores: list[float],
        texts: dict[str, str],
        qrels: dict[str, int],
        extra: dict[str, Any] | None = None,
    ) -> Candidate:
        return cls(
            benchmark,
            subset,
            query_id,
            query,
            ids,
            scores,
            qrels,
            request_digest=digest([query, [texts[i] for i in ids]]),
            candidate_digest=digest([ids, scores]),
            extra=dict(extra or {}),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "query": self.query,
            "ids": self.ids,
            "scores": self.scores,
            "qrels": self.qrels,
            "request_digest": self.request_digest,
            "candidate_digest": self.candidate_digest,
            **({"extra": self.extra} if self.extra else {}),
        }


def candidates_path(study_dir: Path, benchmark: str, subset: str) -> Path:
    return Path(study_dir) / "candidates" / benchmark / f"{subset}.jsonl"


def pages_path(path: Path) -> Path:
    return path.with_name(path.name.replace(".jsonl", ".pages.json"))


def write_candidates(path: Path, records: list[Candidate], texts: dict[str, str]) -> str:
    """Write a subset's candidates and their page texts atomically; returns the candidates' digest.

    The page file goes first: a candidates file never exists without its texts.
    """
    used = sorted({i for r in records for i in r.ids})
    atomic_write_text(pages_path(path), json.dumps({i: texts[i] for i in used}, ensure_ascii=False))
    lines = [json.dumps(r.to_json(), ensure_ascii=False) for r in records]
    atomic_write_text(path, "\n".join(lines) + "\n")
    return digest([r.candidate_digest for r in records])


def read_candidates(path: Path, benchmark: str, subset: str) -> list[Candidate]:
    return [
        Candidate(
            benchmark,
            subset,
            r["query_id"],
            r["query"],
            r["ids"],
            r["scores"],
            r["qrels"],
            r["request_digest"],
            r["candidate_digest"],
            r.get("extra") or {},
        )
        for r in read_jsonl(path)
    ]


def read_texts(path: Path) -> dict[str, str]:
    return json.loads(pages_path(path).read_text(encoding="utf-8"))

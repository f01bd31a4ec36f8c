"""Write a tiny BEIR-layout folder (corpus, queries, qrels) for tests that go through `--benchmark PATH`."""

from __future__ import annotations

import json
from pathlib import Path


def write_beir_folder(
    folder: Path, pages: dict[str, str], queries: dict[str, str], qrels: list[tuple[str, str, int]]
) -> str:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in pages.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items()))
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in qrels)
    )
    return str(folder)

"""mteb's retrieval layout on the Hub (`hub-retrieval`): configs `corpus`, `queries`, qrels, and
optionally `instruction` and `qrel_diff`; used by FinanceBench, CUREv1 and FollowIR.

Every part is one config and split of one repo, declared under `[source.<part>]` with `config`
and `split` (`{subset}` is the subset name: CUREv1's specialties are splits). Defaults are
mteb 2.x's: `corpus`/`queries` configs with splits of the same name, qrels in `default`/`test`.

- Ids may be `_id` or `id` (both spellings are published); ids become strings.
- Page text: `title_mode = "join"` (default) is mteb's and BEIR's `title + " " + text`, stripped;
  `"page"` keeps the title as the page title (methods show it above the text); `"drop"` ignores it.
- Queries are kept only when judged in the qrels (mteb keeps the same; a `queries` config may hold
  every split's queries). Qrels keep every row, judged-irrelevant ones included (> 0 is relevant).
- `instruction` (FollowIR): `query-id`, `instruction` -> `Query.instruction`; the first stage still
  retrieves with the query text alone, rerankers read both.
- `variants = ["og", "changed"]` (FollowIR): query ids end in `-<variant>`; each query records
  its `variant` and `pair` (the id before the suffix) in its metadata.
- `qrel_diff` (FollowIR): `query-id` (a pair id), `corpus-ids` -> `Subset.changed_docs`.
"""

from __future__ import annotations

from typing import Any

from ..base.data import Page, Qrels, Query, Subset
from ..base.errors import DataError, UsageError
from ..base.registry import LOADERS
from .declaration import BenchmarkDeclaration, LoadOptions
from .hub import config_spec, hub_provenance, load_config, pinned_source, require_columns, require_text
from .textsets import check_counts, document_text
from .vidore import read_qrels

TITLE_MODES = ("join", "page", "drop")


def _id_column(dataset, where: str) -> str:
    for column in ("_id", "id"):
        if column in dataset.column_names:
            return column
    raise DataError(f"{where}: no _id or id column", f"found {', '.join(dataset.column_names)}")


def read_pages(dataset, where: str, title_mode: str) -> list[Page]:
    """Pages from a corpus config (`_id`/`id`, `text`, optional `title`)."""
    if title_mode not in TITLE_MODES:
        raise UsageError(f"{where}: title_mode '{title_mode}' is not valid", f"choose from {', '.join(TITLE_MODES)}")
    id_col = _id_column(dataset, where)
    require_columns(dataset, where, (id_col, "text"))
    columns = [id_col, "text", *(["title"] if "title" in dataset.column_names else [])]
    table = dataset.select_columns(columns).to_dict()
    titles = table.get("title") or [None] * len(table[id_col])
    pages = []
    for pid, text, title in zip(table[id_col], table["text"], titles):
        text, title = str(text or ""), str(title or "").strip()
        if title_mode == "join":
            pages.append(Page(str(pid), document_text(title, text)))
        elif title_mode == "page":
            pages.append(Page(str(pid), text, title=title or None))
        else:
            pages.append(Page(str(pid), text))
    return pages


def read_texts(dataset, where: str, text_column: str = "text") -> dict[str, str]:
    id_col = _id_column(dataset, where)
    require_columns(dataset, where, (id_col, text_column))
    table = dataset.select_columns([id_col, text_column]).to_dict()
    return {str(qid): str(text or "") for qid, text in zip(table[id_col], table[text_column])}


def loaded_counts(decl, name: str, where: str, source: dict, queries, pages, qrels: Qrels) -> dict[str, Any]:
    """The loaded counts against the declared published `counts` (queries, docs, judged pairs);
    a difference prints one warning line (`textsets.check_counts`) and is recorded."""
    loaded = {"queries": len(queries), "docs": len(pages), "judged": sum(len(docs) for docs in qrels.values())}
    return check_counts(f"{decl.name}/{name} ({where})", source.get("counts"), loaded)


def split_variant(qid: str, variants: list[str]) -> tuple[str, str] | None:
    """(pair id, variant) of `<pair>-<variant>`, or None when the id carries no declared variant."""
    pair, dash, variant = qid.rpartition("-")
    return (pair, variant) if dash and variant in variants else None


@LOADERS.register(
    "hub-retrieval", description="mteb's retrieval layout on the Hub: corpus, queries, qrels (+ instruction, qrel_diff)"
)
def load(decl: BenchmarkDeclaration, name: str, options: LoadOptions) -> Subset:
    require_text(decl, options)
    source, repo, revision = pinned_source(decl, name, options)
    language = decl.subset(name).native_language

    qrels_config, qrels_split = config_spec(source, "qrels", name, "default", "test")
    qrels_ds, commit = load_config(repo, qrels_config, qrels_split, revision)
    where = f"{repo}@{commit}"
    qrels: Qrels = read_qrels(qrels_ds, f"{where} {qrels_config}", "query-id", "corpus-id")

    queries_config, queries_split = config_spec(source, "queries", name, "queries", "queries")
    queries_ds, _ = load_config(repo, queries_config, queries_split, commit)
    texts = read_texts(queries_ds, f"{where} {queries_config}", str(source.get("query_text", "text")))

    instructions: dict[str, str] = {}
    configs = [qrels_config, queries_config]
    if "instruction" in source:
        config, split = config_spec(source, "instruction", name, "instruction", "instruction")
        instruction_ds, _ = load_config(repo, config, split, commit)
        require_columns(instruction_ds, f"{where} {config}", ("query-id", "instruction"))
        table = instruction_ds.select_columns(["query-id", "instruction"]).to_dict()
        instructions = {str(q): str(i or "") for q, i in zip(table["query-id"], table["instruction"])}
        configs.append(config)

    variants = [str(v) for v in source.get("variants", [])]
    queries = []
    for qid, text in texts.items():
        if qid not in qrels:
            continue
        metadata: dict[str, Any] = {}
        parts = split_variant(qid, variants) if variants else None
        if variants and parts is None:
            raise DataError(
                f"{where} {queries_config}: query id {qid} ends in none of the variants {', '.join(variants)}",
                "fix variants in the declaration",
            )
        if parts:
            metadata.update(pair=parts[0], variant=parts[1])
        if instructions and qid not in instructions:
            raise DataError(f"{where}: query {qid} has no instruction", "the instruction config must cover every query")
        queries.append(Query(qid, text, language, metadata, instruction=instructions.get(qid) or None))
    known = set(texts)
    qrels = {qid: docs for qid, docs in qrels.items() if qid in known}

    changed_docs = None
    if "qrel_diff" in source:
        config, split = config_spec(source, "qrel_diff", name, "qrel_diff", "qrel_diff")
        diff_ds, _ = load_config(repo, config, split, commit)
        require_columns(diff_ds, f"{where} {config}", ("query-id", "corpus-ids"))
        table = diff_ds.select_columns(["query-id", "corpus-ids"]).to_dict()
        changed_docs = {str(q): [str(d) for d in docs] for q, docs in zip(table["query-id"], table["corpus-ids"])}
        configs.append(config)

    corpus_config, corpus_split = config_spec(source, "corpus", name, "corpus", "corpus")
    corpus_ds, _ = load_config(repo, corpus_config, corpus_split, commit)
    pages = read_pages(corpus_ds, f"{where} {corpus_config}", str(source.get("title_mode", "join")))
    configs.append(corpus_config)

    counts = loaded_counts(decl, name, where, source, queries, pages, qrels)
    return Subset(
        benchmark=decl.name,
        name=name,
        native_language=language,
        pages=pages,
        queries=queries,
        qrels=qrels,
        changed_docs=changed_docs,
        source=hub_provenance(
            decl,
            source,
            repo,
            commit,
            configs,
            where,
            pins=[(repo, revision, commit)],
            counts=counts,
            queries_without_qrels=len(texts) - len(queries),
        ),
    )

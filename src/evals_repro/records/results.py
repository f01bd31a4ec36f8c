"""The result record: one typed, versioned file per method and subset, `results/<benchmark>/<method>/<subset>.json`.

`ResultRecord` owns the file: what was run (the pipeline spec and its configuration), on what (the
dataset source, the commit loaded and a digest of the corpus, queries and qrels), how it was scored
(the scoring protocol), the scores (aggregate, per language, per query with its metadata), timings,
spend, package versions (and each plugin's or Python object's identity), and the saved run beside it
(`<subset>.run.gz`, TREC format in trec_eval order, with the judged qrels in `<subset>.qrels.gz`), so a
result can be re-scored, compared for significance or checked with trec_eval. Every reader goes through `load_record` / `scan_records`.

A file is complete when it validates and says `complete: true`; it is written with its saved run,
qrels and gains as one unit (each whole under a temporary name, then renamed, the record last), so a
killed run or a full disk never leaves a partial file, nor a record beside files that are not its own. `covers()` decides what
`--resume` may keep. The JSON Schema is exported to `schemas/result-record.schema.json`.
"""

from __future__ import annotations

import functools
import gc
import json
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..base.errors import DataError
from ..base.io import atomic_write_text
from ..metrics.protocol import ScoringProtocol

# Where a result lives and what --resume decides about it, owned by `units` (no pydantic: refusals import it
# alone); named here too, beside the record that uses them.
from .units import (  # noqa: F401
    RERUN_HINT,
    Action,
    Coverage,
    DamagedResult,
    Setting,
    Verdict,
    method_folder,
    method_of_folder,
    migrate_method_folder,
    result_path,
    run_paths,
)

SCHEMA_VERSION: Final = 2


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LanguageBlock(_Model):
    n_queries: int
    metrics: dict[str, float]


class QueryEntry(_Model):
    language: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, float]


class DataDigest(_Model):
    """sha256 digests of what the result was computed on (see `Subset.digests`)."""

    corpus: str
    queries: str
    qrels: str
    gains: str | None = None
    pools: str | None = None
    subtopics: str | None = None  # nugget judgments (FreshStack)
    changed_docs: str | None = None  # instruction pairs' changed documents (FollowIR)
    combined: str


class SavedRun(_Model):
    """The ranking beside the result, and the judgments it is scored against (paths relative to the result)."""

    path: str
    sha256: str
    qrels_path: str
    qrels_sha256: str
    n_queries: int
    n_lines: int
    gains_path: str | None = None  # float gains (RCP-nDCG), TREC qrels layout
    gains_sha256: str | None = None
    order: str = "score descending, then doc id descending (trec_eval)"


class Cost(_Model):
    """What a result's requests cost in USD at the price table's date, from what each provider model billed."""

    usd: float | None  # None: some model has no price (named in price_unknown); never counted as 0
    usd_priced: float  # the sum over what has a price
    price_unknown: list[str] = Field(default_factory=list)  # "provider model (unit)"
    by_model: dict[str, float | None] = Field(default_factory=dict)  # "provider model" -> USD
    billed: dict[str, dict[str, float]] = Field(default_factory=dict)  # "provider model" -> unit -> amount
    prices_date: str
    prices: str  # "shipped" or the --prices file
    self_hosted: list[str] = Field(default_factory=list)  # "provider model" served by your own servers: no price

    @classmethod
    def of(cls, billed: dict[tuple[str, str, str], float], self_hosted: Iterable[str] = ()) -> Cost | None:
        """The cost of billed units (and of work on your own servers, which has no price) at the current price
        table; None when nothing was billed and nothing self-hosted was called."""
        from ..providers.prices import cost_of

        served = list(self_hosted)
        if not billed and not served:
            return None
        units: dict[str, dict[str, float]] = {}
        for (provider, model, unit), amount in billed.items():
            units.setdefault(f"{provider} {model}", {})[unit] = amount
        return cls(**cost_of(billed, served).as_dict(), billed=units)

    def text(self) -> str:
        from ..providers.prices import cost_text

        return cost_text(self.usd_priced, self.price_unknown, bool(self.self_hosted))


class MethodConfig(_Model):
    """What was run: enough to rebuild the method and tell two configurations apart."""

    method: str  # the method name as written (label without the content suffix)
    pipeline: dict[str, Any]
    content: str
    top_k: int
    options: dict[str, Any] = Field(default_factory=dict)  # options that change results (rerank_top_k, ...)
    retriever: dict[str, Any] = Field(default_factory=dict)  # the built pipeline's own description
    view: str | None = None
    pool: dict[str, Any] | None = None


class Flags(_Model):
    meaningful_depth: int
    note: str


class ResultRecord(_Model):
    schema_version: Literal[2] = SCHEMA_VERSION
    complete: Literal[True] = True
    benchmark: str
    subset: str
    method: str  # the results folder name: method name plus `[images]` for page-image runs
    first_stage: str  # the report row group (a reranked method sits under its first stage)
    reranked: bool
    setting: Setting
    native_language: str
    config: MethodConfig
    protocol: dict[str, Any]
    data: DataDigest
    source: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)
    usage: dict[str, float] = Field(default_factory=dict)
    cost: Cost | None = None  # the usage in USD (absent: nothing billed, or written before costs were kept)
    metrics: dict[str, float]
    languages: dict[str, LanguageBlock]
    per_query: dict[str, QueryEntry]
    n_queries: int
    skipped_queries: list[str] = Field(default_factory=list)
    empty_queries: list[str] = Field(default_factory=list)  # ranked, but the method returned no page for them
    unpooled_queries: list[str] | None = None
    variants: dict[str, LanguageBlock] | None = None  # per instruction variant (FollowIR: og, changed)
    timings: dict[str, float] = Field(default_factory=dict)
    flags: Flags | None = None
    run: SavedRun
    created: str

    # -- what readers need ---------------------------------------------------------------------
    @property
    def scoring(self) -> ScoringProtocol:
        return ScoringProtocol.from_dict(self.protocol)

    @property
    def tie_rule(self) -> str | None:
        """The tie rule of its float-gain measures, None when it has none."""
        if not any(m.startswith("ndcg_float") for m in self.metrics):
            return None
        return str(self.protocol.get("tie_rule"))

    def score(self, setting: Setting | str, measure: str) -> float | None:
        """The subset's score in a setting: the native language's mean (monolingual), or the mean of
        the per-language means (crosslingual; only a crosslingual result has it)."""
        if Setting(setting) is Setting.MONOLINGUAL:
            block = self.languages.get(self.native_language)
            return None if block is None else block.metrics.get(measure)
        if self.setting is not Setting.CROSSLINGUAL:
            return None
        return self.metrics.get(measure)

    def components(self) -> dict[str, dict[str, Any]]:
        """The identity of each plugin or Python object the method was built from, by the name it ran under
        (`base.identity.ComponentIdentity.as_dict`; empty for built-ins only)."""
        return dict(self.config.pipeline.get("plugins") or {})

    def covers(self, request: Coverage) -> Verdict:
        """Whether this result answers `request` as is (keep), from its saved run (rescore), or not (rerun)."""
        if self.setting is not request.setting and not (
            request.setting is Setting.MONOLINGUAL and self.setting is Setting.CROSSLINGUAL
        ):
            return Verdict.rerun(f"it was computed {self.setting.value}")
        if self.config.pipeline != request.pipeline:
            return Verdict.rerun(_configuration_change(self.config.pipeline, request.pipeline))
        if self.config.options != request.options:
            differing = sorted(set(self.config.options.items()) ^ set(request.options.items()))
            return Verdict.rerun(f"its options differ ({', '.join(f'{k}={v}' for k, v in differing)})")
        if self.config.top_k != request.top_k:
            return Verdict.rerun(f"it used top_k {self.config.top_k}")
        revision = self.source.get("revision")
        if request.revision is not None and revision != request.revision:
            return Verdict.rerun(f"it used revision {revision}, not {request.revision}")
        if self.data.combined != request.data_digest:
            return Verdict.rerun("the data changed since (corpus, queries or qrels digest differs)")
        scoring = self.scoring
        if scoring.rules() != request.protocol.rules():
            changed = sorted(k for k, v in request.protocol.rules().items() if scoring.rules().get(k) != v)
            return Verdict.rescore(f"it was scored with another {', '.join(changed)}")
        missing = [m for m in request.protocol.measures if m not in scoring.measures]
        if missing:
            return Verdict.rescore(f"it lacks {', '.join(missing)}")
        return Verdict.keep()

    # -- files ----------------------------------------------------------------------------------
    def to_json(self) -> str:
        return self.model_dump_json(indent=1, exclude_none=False) + "\n"

    def save(self, path: Path) -> None:
        """The record alone (a run writes it with its saved files as one unit, see `io.write_unit`)."""
        atomic_write_text(path, self.to_json())


def _configuration_change(recorded: dict[str, Any], requested: dict[str, Any]) -> str:
    """Why two pipeline configurations differ; a plugin's or Python object's new identity (a version, its
    describe(), its sources) is named, since that is the usual cause when nothing else changed."""
    from ..base.identity import what_changed

    if {k: v for k, v in recorded.items() if k != "plugins"} == {k: v for k, v in requested.items() if k != "plugins"}:
        before, after = recorded.get("plugins") or {}, requested.get("plugins") or {}
        changed = [
            f"{name}: {what_changed(before.get(name) or {}, after.get(name) or {})}"
            for name in sorted(set(before) | set(after))
            if before.get(name) != after.get(name)
        ]
        if changed:
            return "; ".join(changed)
    return "its method configuration differs"


# Records read in this process, by path and by which per-query scores were kept (`load_record`), with a digest of
# the bytes they were read from: `report` reads every result of a benchmark for its tables, again for its comparisons
# and figures, and each file is parsed once. Keyed by content, not by file times: a file rewritten in place within
# one clock tick is still read anew.
_READ: dict[tuple[Path, frozenset[str] | None], tuple[bytes, ResultRecord]] = {}


def load_record(path: Path, per_query: Collection[str] | None = None) -> ResultRecord:
    """The record at `path`; DamagedResult names the file and the first bad field.

    `per_query`: the measures whose per-query scores to keep (None: every one). `report` shows one or two measures
    of files that hold twenty per query: the others are skipped, their JSON checked but their values neither
    validated nor kept (half the reading, a fifth of the objects). Every other field is read and validated whole."""
    import xxhash

    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot read result file ({exc.strerror})", "check the path") from None
    digest = xxhash.xxh3_128_digest(text)
    kept = None if per_query is None else frozenset(per_query)
    for key in dict.fromkeys([(path, None), (path, kept)]):  # a whole record serves any reading
        known = _READ.get(key)
        if known is not None and known[0] == digest:
            return known[1]
    try:
        record = _parse(text, kept)
    except ValidationError:
        record = _validated(path, text)  # names what is wrong, as it always has
    _READ[(path, kept)] = (digest, record)
    return record


def _parse(text: bytes, kept: frozenset[str] | None) -> ResultRecord:
    """Parsed and checked in one pass (pydantic-core), with only the `kept` measures' per-query scores."""
    model = ResultRecord if kept is None else _keeping(kept)
    return model.model_validate_json(text)


@functools.cache
def _keeping(kept: frozenset[str]) -> type[ResultRecord]:
    """ResultRecord whose per-query entries keep the scores of `kept` only (a subclass: every reader takes it).
    Their `metrics` stay dicts; each kept score is validated as a float, the others are skipped unparsed into
    Python (pydantic-core's `extra="ignore"`). A file this refuses, the whole model refuses too."""
    from pydantic import create_model

    scores = TypedDict("QueryScores", dict.fromkeys(sorted(kept), float), total=False)  # type: ignore[misc]
    scores.__pydantic_config__ = ConfigDict(extra="ignore")  # type: ignore[attr-defined]
    entry = create_model("QueryEntry", __base__=QueryEntry, metrics=(scores, ...))
    return create_model("ResultRecord", __base__=ResultRecord, per_query=(dict[str, entry], ...))  # type: ignore[valid-type]


def _validated(path: Path, raw: bytes) -> ResultRecord:
    """The record from the file's bytes, or the DamagedResult (or DataError) that says what is wrong with it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DamagedResult(f"{path}: result file is damaged (not UTF-8)", RERUN_HINT) from None
    try:
        data = json.loads(text)
    except ValueError:
        raise DamagedResult(f"{path}: result file is damaged (not valid JSON; truncated?)", RERUN_HINT) from None
    if isinstance(data, dict) and data.get("schema_version") != SCHEMA_VERSION:
        found = data.get("schema_version", data.get("schema"))
        raise DamagedResult(
            f"{path}: result file has schema version {found}, this version reads {SCHEMA_VERSION}",
            RERUN_HINT,
        )
    try:
        return ResultRecord.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise DamagedResult(
            f"{path}: result file field '{field}' is invalid ({first['msg'].lower()})",
            RERUN_HINT,
        ) from None


def read_record(path: Path) -> ResultRecord | None:
    """The complete record at `path`, or None when there is none; a damaged file raises DamagedResult."""
    if not Path(path).exists():
        return None
    return load_record(path)


def scan_records(
    results_dir: Path, benchmark: str, per_query: Collection[str] | None = None
) -> list[tuple[Path, ResultRecord]]:
    """Every result file of a benchmark, in a stable order, keeping the per-query scores of `per_query`'s measures
    (None: all; `load_record`); the first damaged one raises DamagedResult."""
    root = Path(results_dir) / benchmark
    if root.exists() and not root.is_dir():
        raise DataError(f"{root} is a file, not a results folder", "pass --results-dir pointing at a folder")
    paths = sorted(root.glob("*/*.json"))
    with _collector_paused():
        return [(path, load_record(path, per_query)) for path in paths]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Reading a benchmark's results makes hundreds of thousands of objects, none of them garbage: the cyclic
    collector, run every few hundred allocations, would walk them all again and again (a fifth of the time). Once
    read they stay (`_READ` keeps them for the process), so they are then frozen out of its sight (`gc.freeze`):
    else it walks them all again as it promotes them, at each full collection after, and at exit (a third of
    `report --baseline`'s CPU on 160 files). Frozen objects are still freed when their last reference goes
    (records hold no cycles); the garbage cycles of before are collected first (a few milliseconds), so none is
    frozen with them. A caller that turned the collector off keeps it off, and nothing is frozen."""
    if not gc.isenabled():
        yield
        return
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def export_schema(path: Path) -> None:
    """Write the record's JSON Schema (kept in the repository and checked by a test)."""
    schema = ResultRecord.model_json_schema()
    atomic_write_text(path, json.dumps(schema, indent=1, sort_keys=True) + "\n")

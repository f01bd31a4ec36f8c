"""The pipeline spec: a first stage (one method, or an RRF of several), then optionally a reranker.

One typed value describes a method, whether it came from a method name or from CLI options; its
label (the results folder), its report group and the components it builds are all derived from it.
Grammar of a method name:

- `bm25`, `minilm`, `voyage-4-large`, `mixedbread-markdown+rerank`: a registered first stage (every
  registered embedder is one: dense retrieval over the exact index);
- `rrf:<a>+<b>[+...]`: reciprocal rank fusion (k = 60) of registered first stages;
- `<first stage>+<reranker>[:model]@<depth>`: a reranker over any first stage, RRF included
  (`rrf:bm25+minilm+cohere@50`; after `rrf:` the reranker needs its `@depth`, else it would read as
  one more fused method). Without `@depth` the depth is 50.

A pooled view (a benchmark whose queries each rank a judged candidate pool) replaces the first
stage of a reranked pipeline by the pool (`pool+cohere`, the whole pool reranked) before anything
is built, so a first stage that would not be called is never built and never needs a key.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..base.context import MethodContext
from ..base.errors import ConfigurationError, UsageError, choices
from ..base.registry import EMBEDDERS, METHODS, RERANKERS, Entry
from ..retrieval.base import Retriever

CONTENTS = ("markdown", "images")
DEFAULT_RERANK_DEPTH = 50
DEFAULT_RRF_K = 60
POOL = "pool"


def first_stage_entry(name: str) -> Entry | None:
    """A registered first stage: a retrieval method, or an embedder (dense retrieval)."""
    return METHODS.get(name) or EMBEDDERS.get(name)


def first_stage_names() -> list[str]:
    return sorted(set(METHODS.names()) | set(EMBEDDERS.names()))


def _unknown_method(name: str) -> UsageError:
    refused = METHODS.refused(name) or EMBEDDERS.refused(name)
    if refused:
        return UsageError(f"method '{name}' is refused: {refused}", "rename or uninstall one of the plugins")
    return UsageError(
        f"unknown method '{name}'",
        f"choose from {choices(first_stage_names())}, rrf:<a>+<b>, or <first stage>+<reranker>@<depth> "
        f"with a reranker from {choices(RERANKERS.names())}",
    )


@dataclass(frozen=True)
class RerankSpec:
    """A reranker over the first stage's top `depth` candidates (None: every candidate, as in pool views)."""

    reranker: str
    model: str | None = None
    depth: int | None = DEFAULT_RERANK_DEPTH

    def __post_init__(self) -> None:
        if self.depth is not None and self.depth < 1:
            raise UsageError(f"rerank depth {self.depth} must be at least 1", "write e.g. +cohere@50")

    @property
    def label(self) -> str:
        model = f":{self.model}" if self.model else ""
        depth = f"@{self.depth}" if self.depth is not None else ""
        return f"{self.reranker}{model}{depth}"


@dataclass(frozen=True)
class PipelineSpec:
    """What a method is: its first stage(s), the optional reranker, and the page content it reads."""

    first_stage: tuple[str, ...]
    rerank: RerankSpec | None = None
    content: str = "markdown"
    rrf_k: int = DEFAULT_RRF_K

    def __post_init__(self) -> None:
        if not self.first_stage:
            raise UsageError("a method needs a first stage", "write e.g. bm25")
        if self.content not in CONTENTS:
            raise UsageError(f"--content '{self.content}' is not valid", f"choose from {choices(CONTENTS)}")
        for name in self.first_stage:
            if first_stage_entry(name) is None:
                raise _unknown_method(name)
        twice = sorted({name for name in self.first_stage if self.first_stage.count(name) > 1})
        if twice:
            offline = ["minilm", "bm25", "multilingual-e5-small"]  # a hint that costs nothing to try
            others = [n for n in [*offline, *first_stage_names()] if n not in self.first_stage and n != POOL]
            raise UsageError(
                f"method '{self.method_name}' fuses {', '.join(twice)} more than once (it would only weigh it double)",
                f"fuse different methods, each once, e.g. rrf:{twice[0]}+{others[0] if others else 'minilm'}",
            )
        if self.rerank is not None:
            entry = RERANKERS.get(self.rerank.reranker)
            if entry is None:
                RERANKERS.require(self.rerank.reranker)  # a refused plugin name says why
                raise UsageError(
                    f"unknown reranker '{self.rerank.reranker}'", f"choose from {choices(RERANKERS.names())}"
                )
            models = entry.extra.get("models")
            if self.rerank.model is not None and entry.plugin is not None:
                raise UsageError(
                    f"reranker {self.rerank.reranker} ({entry.owner()}) takes no :model, and "
                    f"'{self.rerank.model}' is given",
                    f"write +{self.rerank.reranker}@{self.rerank.depth or DEFAULT_RERANK_DEPTH}",
                )
            if self.rerank.model is not None and models is not None and self.rerank.model not in models:
                raise UsageError(
                    f"unknown model '{self.rerank.model}' for reranker {self.rerank.reranker}",
                    f"choose from {choices(models)} (write +{self.rerank.reranker}:{models[0]}@50)",
                )

    # -- parsing ---------------------------------------------------------------------------------
    @classmethod
    def parse(cls, name: str, content: str = "markdown") -> PipelineSpec:
        """The spec a method name denotes (see the module docstring); UsageError names the valid forms."""
        name = name.strip()
        fused = name.startswith("rrf:")
        body = name[4:] if fused else name
        first, rerank = _split_reranker(body, fused, name)
        if fused:
            members = tuple(_split_members(first, name))
            if len(members) < 2:
                raise UsageError(f"method '{name}': rrf needs at least two methods", "write rrf:bm25+minilm")
        else:
            if first_stage_entry(first) is None:
                raise _unknown_method(first)
            members = (first,)
        return cls(members, rerank, content)

    @classmethod
    def from_options(
        cls,
        method: str,
        content: str = "markdown",
        rerank: str | None = None,
        rerank_depth: int | None = None,
    ) -> PipelineSpec:
        """A method name plus `--rerank NAME[:model] --rerank-depth N`, as the CLI gives them (depth None:
        the default). A depth without `--rerank`, or beside a name that sets its own, is refused: it
        would be ignored without a word and another depth (or none) run than asked."""
        spec = cls.parse(method, content)
        if rerank_depth is not None and (rerank is None or spec.rerank is not None):
            if spec.rerank is not None:
                wanted = replace(spec, rerank=replace(spec.rerank, depth=rerank_depth)).method_name
                raise UsageError(
                    f"--rerank-depth {rerank_depth} conflicts with method '{method}', which sets its own depth",
                    f"write the depth in the name ({wanted}) and drop --rerank-depth",
                )
            raise UsageError(
                f"--rerank-depth {rerank_depth} is the depth of --rerank, and no --rerank is given (method '{method}')",
                "add --rerank NAME (see `evals-repro methods`), or drop --rerank-depth",
            )
        if rerank is None:
            return spec
        if spec.rerank is not None:
            raise UsageError(
                f"method '{method}' already has a reranker and --rerank {rerank} adds another",
                "give the reranker once, in the name or with --rerank",
            )
        reranker, _, model = rerank.partition(":")
        depth = DEFAULT_RERANK_DEPTH if rerank_depth is None else rerank_depth
        return replace(spec, rerank=RerankSpec(reranker, model or None, depth))

    def check_method_options(self, options: dict[str, Any]) -> None:
        """Options only some first stages take (their registration's `options`, e.g. `rerank_top_k`,
        `store_prefix`): given to another method they would change nothing but the result's recorded
        options, so `--resume` would later recompute for nothing. Refused, naming the methods that take them."""

        def takes(name: str) -> tuple[str, ...]:  # read without importing a component that declares none
            found = METHODS.options_of(name)
            return found if found is not None else (EMBEDDERS.options_of(name) or ())

        declared = {option for name in first_stage_names() for option in takes(name)}
        for key in sorted(declared):
            if options.get(key) is not None and not any(key in takes(name) for name in self.first_stage):
                flag = "--" + key.replace("_", "-")
                raise UsageError(
                    f"{flag} applies to {choices(n for n in first_stage_names() if key in takes(n))}, "
                    f"not to '{self.method_name}'",
                    f"drop {flag}, or run one of those methods",
                )

    # -- what is derived from it -----------------------------------------------------------------
    @property
    def fused(self) -> bool:
        return len(self.first_stage) > 1

    @property
    def first_stage_label(self) -> str:
        return "rrf:" + "+".join(self.first_stage) if self.fused else self.first_stage[0]

    @property
    def method_name(self) -> str:
        """The name as a user writes it (without the content suffix)."""
        return self.first_stage_label + (f"+{self.rerank.label}" if self.rerank else "")

    @property
    def label(self) -> str:
        """The results folder name: the method name, plus `[images]` for page-image runs."""
        return _with_content(self.method_name, self.content)

    @property
    def report_group(self) -> str:
        """The first-stage row a result sits under in reports (a store's `+rerank` sits under the store)."""
        group = self.first_stage_label
        if not self.fused:
            entry = first_stage_entry(group)
            group = (entry.extra.get("report_group") if entry else None) or group
        return _with_content(group, self.content)

    @property
    def reranked(self) -> bool:
        """Whether anything reranks the first stage's results (a reranker, or the store's own)."""
        return self.rerank is not None or self.report_group != _with_content(self.first_stage_label, self.content)

    def key_envs(self) -> list[str]:
        """Environment variables holding the API keys this pipeline needs."""
        entries = [first_stage_entry(name) for name in self.first_stage]
        if self.rerank is not None:
            entries.append(RERANKERS.get(self.rerank.reranker))
        return sorted({e.key_env for e in entries if e is not None and e.key_env})

    def check_languages(self, languages: dict[str, str], option: str | None = None) -> None:
        """Refuse, before any data is loaded, a corpus language a first stage cannot analyse (`languages`:
        subset -> native language; BM25 declares the languages it has a stemmer for). `option` names the
        option that set the language, if the user gave it (`--language`)."""
        for name in self.first_stage:
            entry = first_stage_entry(name)
            known = entry.extra.get("languages") if entry is not None else None
            if not known:
                continue
            for subset, language in languages.items():
                if language.strip().lower() in known:
                    continue
                where = f"{option} {language}" if option else f"subset {subset} (language '{language}')"
                raise UsageError(
                    f"{where}: method {name} has no text analysis for corpus language '{language}'",
                    f"use one of {choices(sorted(known))}",
                )

    def for_pooled_view(self) -> PipelineSpec:
        """On a benchmark whose queries rank judged pools, a reranker reranks the whole pool."""
        if self.rerank is None:
            return self
        return replace(self, first_stage=(POOL,), rerank=replace(self.rerank, depth=None))

    def plugin_entries(self) -> list[Entry]:
        """The components that come from plugins or Python objects, first stages then the reranker."""
        entries = [first_stage_entry(name) for name in self.first_stage]
        if self.rerank is not None:
            entries.append(RERANKERS.get(self.rerank.reranker))
        return [e for e in entries if e is not None and e.plugin is not None]

    def as_dict(self) -> dict[str, Any]:
        described: dict[str, Any] = {
            "first_stage": list(self.first_stage),
            "fusion": {"method": "rrf", "k": self.rrf_k} if self.fused else None,
            "reranker": (
                {"name": self.rerank.reranker, "model": self.rerank.model, "depth": self.rerank.depth}
                if self.rerank
                else None
            ),
            "content": self.content,
        }
        plugin_entries = self.plugin_entries()
        if plugin_entries:  # their identities decide, with the rest, whether a result covers a run
            from .plugins import recorded

            described["plugins"] = {entry.name: recorded(entry) for entry in plugin_entries}
        return described

    # -- building --------------------------------------------------------------------------------
    def build_first_stage(self, ctx: MethodContext) -> Retriever:
        retrievers = [_build_first(name, self.content, ctx) for name in self.first_stage]
        if not self.fused:
            return retrievers[0]
        from ..retrieval.fusion import RRFRetriever

        return RRFRetriever(retrievers, name=self.first_stage_label, k=self.rrf_k)

    def build_reranker(self, ctx: MethodContext) -> Any:
        assert self.rerank is not None
        entry = RERANKERS.require(self.rerank.reranker)
        if entry.plugin is not None:
            from .plugins import build_checked

            return build_checked(entry, self.rerank.reranker, self.rerank.model, ctx)
        return entry.factory(self.rerank.reranker, self.rerank.model, ctx)

    def build(self, ctx: MethodContext) -> Retriever:
        """The whole pipeline as one Retriever; bad keys and content mismatches fail here, before any work."""
        first = self.build_first_stage(ctx)
        if self.rerank is None:
            return first
        from ..rerankers.pipeline import RerankedRetriever

        entry = RERANKERS.require(self.rerank.reranker)
        # A hosted API's answers are journaled, and so are those of a plugin or Python object from an installed
        # distribution (what it costs is unknown, so never taken as free), keyed by its identity, which pins its
        # code; an object of no distribution (a script's, a notebook's) and a local built-in model run again.
        journaled = bool(entry.key_env) or bool(entry.plugin and entry.plugin.distribution)
        return RerankedRetriever(
            first,
            self.build_reranker(ctx),
            depth=self.rerank.depth,
            name=self.method_name,
            journal_dir=Path(ctx.cache_dir) / "rerank-calls" if journaled else None,
        )


def _with_content(name: str, content: str) -> str:
    return name if content == "markdown" else f"{name}[{content}]"


def _build_first(name: str, content: str, ctx: MethodContext) -> Retriever:
    entry = first_stage_entry(name)
    if entry is None:
        raise _unknown_method(name)
    if content not in entry.contents:
        raise UsageError(f"method '{name}' cannot take --content {content}", f"it accepts {choices(entry.contents)}")
    if ctx.content != content:
        raise ConfigurationError(f"method '{name}' built for --content {ctx.content}, spec says {content}", "")
    if entry.plugin is not None:
        from .plugins import build_checked, identity_of

        built = build_checked(entry, name, ctx)
        if entry.kind == "embedder":  # batches, budgets, checks, the cache (keyed by its identity), the exact index
            from ..embedders.guarded import GuardedEmbedder
            from ..retrieval.dense import DenseRetriever
            from .plugins import component_label

            guarded = GuardedEmbedder(
                built, name, ctx.usage, identity=identity_of(entry, built), label=component_label(entry)
            )
            return DenseRetriever(name, guarded, ctx)
        return built
    if entry.kind == "embedder":
        from ..retrieval.dense import build as build_dense

        return build_dense(name, ctx)
    return entry.factory(name, ctx)


def _split_reranker(body: str, fused: bool, whole: str) -> tuple[str, RerankSpec | None]:
    """(first-stage part, reranker) of a method name; no reranker when the tail is not one."""
    head, plus, tail = body.rpartition("+")
    if not plus:
        return body, None
    if fused and first_stage_entry(tail) is not None:
        return body, None  # `rrf:bm25+openai:m`: the last member is a first stage with a colon, not a reranker
    reranker_part, at, depth_text = tail.partition("@")
    reranker, _, model = reranker_part.partition(":")
    if RERANKERS.get(reranker) is None:
        if RERANKERS.refused(reranker):
            RERANKERS.require(reranker)  # says which plugins clash
        if at or model:  # written as a reranker, but not one
            raise UsageError(
                f"unknown reranker '{reranker}' in method '{whole}'", f"choose from {choices(RERANKERS.names())}"
            )
        return body, None
    if not at and (fused or first_stage_entry(body) is not None):
        return body, None  # `rrf:bm25+minilm`, `mixedbread-markdown+rerank`: not a reranker
    depth = DEFAULT_RERANK_DEPTH
    if at:
        try:
            depth = int(depth_text)
        except ValueError:
            raise UsageError(
                f"method '{whole}': rerank depth '{depth_text}' is not a number", f"write +{reranker}@50"
            ) from None
    if "+" in head and not fused and first_stage_entry(head) is None:
        inner_head, _, inner_tail = head.rpartition("+")
        if RERANKERS.get(inner_tail.partition("@")[0].partition(":")[0]) is not None:
            raise UsageError(f"method '{whole}': only one reranker per method", "drop the extra +reranker")
    return head, RerankSpec(reranker, model or None, depth)


def _split_members(body: str, whole: str) -> list[str]:
    """RRF members, matching registered names that themselves contain '+' (store `+rerank`) first."""
    parts = body.split("+")
    members: list[str] = []
    i = 0
    while i < len(parts):
        for j in range(len(parts), i, -1):
            candidate = "+".join(parts[i:j])
            if first_stage_entry(candidate) is not None:
                members.append(candidate)
                i = j
                break
        else:
            raise _unknown_method(parts[i] or whole)
    return members

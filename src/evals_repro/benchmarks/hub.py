"""Pinned access to Hugging Face Hub datasets, shared by the Hub loaders.

`datasets.load_dataset` downloads on first use into the datasets/Hub cache and honours
HF_HOME, HF_ENDPOINT and HF_HUB_OFFLINE. Two of its behaviours would break pinning or make a
user wait, so every load goes through `load_config`:

- With the Hub unreachable, `huggingface_hub` retries each file for ~25 s and `datasets` then
  falls back to *the latest cached revision*, whatever its sha. A single probe request per
  repo and revision (no retries) turns that into one clear `ConfigurationError` instead.
- Offline (HF_HUB_OFFLINE=1) it returns the most recently cached revision of a config, whatever
  its sha; offline loads therefore read exactly the pinned commit's cache folder, or fail.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..base.errors import ConfigurationError, DataError, UsageError
from .declaration import BenchmarkDeclaration, LoadOptions

FULL_SHA = re.compile(r"[0-9a-f]{40}")
PROBE_TIMEOUT_SECONDS = 10.0

# (endpoint, repo, revision) -> commit sha, so one process probes each pinned repo once.
_RESOLVED: dict[tuple[str, str, str], str] = {}


def pinned_source(
    decl: BenchmarkDeclaration, name: str, options: LoadOptions, repo_field: str = "repo"
) -> tuple[dict[str, Any], str, str]:
    """The subset's source fields, its repo and the revision to load (`--revision` wins).

    A declared revision that is not a full sha must be marked `unpinned = "<why>"` in the
    declaration (no public commit was found for that repo): it loads, but says so on every run.
    """
    source = decl.subset_source(name)
    repo = source.get(repo_field)
    if not repo:
        raise DataError(
            f"benchmark {decl.name}: subset {name} declares no {repo_field} in {decl.origin}",
            f'add {repo_field} = "owner/name" to the subset or the [source] table',
        )
    revision = options.revision or source.get("revision")
    if not revision:
        raise DataError(
            f"benchmark {decl.name}: subset {name} declares no revision in {decl.origin}",
            'pin a full commit sha with revision = "..." (or pass --revision)',
        )
    revision = str(revision)
    if not options.revision and not FULL_SHA.fullmatch(revision) and not source.get("unpinned"):
        raise DataError(
            f"benchmark {decl.name}: subset {name} declares revision '{revision}', not a commit sha, in {decl.origin}",
            'pin a full 40-hex-digit sha, or mark the declaration unpinned = "<why>" so runs say so',
        )
    return source, str(repo).format(subset=name), revision


def pin_note(repo: str, revision: str, commit: str, source: dict[str, Any]) -> str | None:
    """One line for a load that no full sha pinned; None when it was pinned."""
    if FULL_SHA.fullmatch(revision):
        return None
    why = source.get("unpinned") or "no commit sha declared"
    return (
        f"{repo} is not pinned ({why}): revision {revision} resolved to {commit}; "
        f"pass --revision {commit} to load exactly this data again"
    )


def hub_provenance(
    decl: BenchmarkDeclaration,
    source: dict[str, Any],
    repo: str,
    commit: str,
    configs: list[str],
    origin: str,
    *,
    pins: Iterable[tuple[str, str, str]] = (),
    counts: dict[str, Any] | None = None,
    **facts: Any,
) -> dict[str, Any]:
    """`Subset.source` of a subset read from Hub configs, in the one shape every Hub loader records
    (result files and study manifests copy it): the loader, the repo and the commit it resolved to,
    the configs read and where from, the loader's own `facts` (split, queries dropped...), the declared
    licence, the counts check, and a `pin_note` for each (repo, requested revision, commit) in `pins`
    that no full sha pinned (the registry prints the notes)."""
    notes = [note for note in (pin_note(r, requested, c, source) for r, requested, c in pins) if note]
    return {
        "kind": decl.loader,
        "repo": repo,
        "revision": commit,
        "configs": configs,
        "origin": origin,
        **facts,
        **({"licence": source["licence"]} if source.get("licence") else {}),
        # the benchmark's own published measures, scored beside the requested ones (pooling.measures_for)
        **({"own_measures": list(source["own_measures"])} if source.get("own_measures") else {}),
        **({"counts": counts} if counts is not None else {}),
        **({"notes": notes} if notes else {}),
    }


def require_text(decl: BenchmarkDeclaration, options: LoadOptions) -> None:
    """Refuse `--content images` for a benchmark whose Hub data holds text only."""
    if options.content != "markdown":
        raise UsageError(f"benchmark {decl.name}: --content {options.content} is not available", "it holds text only")


def config_spec(
    source: dict[str, Any], part: str, name: str, default_config: str, default_split: str
) -> tuple[str, str]:
    """(config, split) of one part (corpus, queries, qrels...) from `[source.<part>]`, `{subset}` filled in."""
    spec = source.get(part) or {}
    if not isinstance(spec, dict):
        raise DataError(f"source field '{part}' must be a table", f'write {part} = {{ config = "...", split = "..." }}')
    config = str(spec.get("config", default_config)).format(subset=name)
    split = str(spec.get("split", default_split)).format(subset=name)
    return config, split


def hub_token() -> str | None:
    """The token `huggingface_hub` would send: HF_TOKEN, else the one saved by `hf auth login`."""
    from huggingface_hub import get_token

    return get_token()


def gated_error(repo: str, source: dict[str, Any]) -> ConfigurationError:
    licence = source.get("licence")
    page = source.get("licence_page") or f"{endpoint()}/datasets/{repo}"
    what = f"{repo} is gated" + (f" ({licence})" if licence else "")
    return ConfigurationError(
        f"{what}: accept its terms at {page}", "then set HF_TOKEN to a token of that account (or run `hf auth login`)"
    )


def require_access(decl: BenchmarkDeclaration) -> None:
    """Stop before any work when a declared gated source has no token to read it with."""
    for subset in decl.subset_names:
        source = decl.subset_source(subset)
        if source.get("gated") and hub_token() is None:
            repo = str(source.get("gated_repo") or source.get("repo") or decl.name).format(subset=subset)
            raise gated_error(repo, source)


def offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def _is_network_error(exc: BaseException) -> bool:
    """Connection refused, DNS failure, timeouts: whatever HTTP stack huggingface_hub uses."""
    if isinstance(exc, (OSError, TimeoutError)):
        return True
    return any(cls.__name__ in ("TransportError", "TimeoutException") for cls in type(exc).__mro__)


def unreachable(repo: str, revision: str, cause: str) -> ConfigurationError:
    return ConfigurationError(
        f"cannot reach the Hugging Face Hub at {endpoint()} for {repo}@{revision} ({cause})",
        "download it once with network access, set HF_ENDPOINT to a reachable mirror, "
        "or use the offline cache with HF_HUB_OFFLINE=1",
    )


def resolve_revision(repo: str, revision: str) -> str:
    """The commit a revision names, checked with one request (no retries); cached per process."""
    key = (endpoint(), repo, revision)
    if key in _RESOLVED:
        return _RESOLVED[key]
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    try:
        info = HfApi().dataset_info(repo, revision=revision, timeout=PROBE_TIMEOUT_SECONDS)
    except GatedRepoError:
        raise gated_error(repo, {}) from None
    except RevisionNotFoundError:
        raise DataError(
            f"revision {revision} does not exist in dataset {repo} on {endpoint()}",
            "pass a commit sha or branch of that repo with --revision, or fix the declaration",
        ) from None
    except RepositoryNotFoundError:
        raise DataError(
            f"dataset {repo} does not exist on {endpoint()} (or needs a login)", "fix repo in the benchmark declaration"
        ) from None
    except Exception as exc:
        if _is_network_error(exc):
            raise unreachable(repo, revision, type(exc).__name__) from None
        raise
    if getattr(info, "gated", False) and hub_token() is None:
        raise gated_error(repo, {})
    _RESOLVED[key] = info.sha or revision
    return _RESOLVED[key]


def _loaded_commit(dataset) -> str | None:
    """The commit sha in the dataset's cache path (`.../<config>/0.0.0/<sha>/...`)."""
    for item in getattr(dataset, "cache_files", []) or []:
        for part in reversed(Path(item.get("filename", "")).parts):
            if FULL_SHA.fullmatch(part):
                return part
    return None


def load_config(repo: str, config: str, split: str, revision: str, *, images: tuple[str, ...] = ()):
    """One config/split of a Hub dataset at one revision; `images` columns stay encoded bytes.

    Returns `(dataset, commit_sha)`. Raises `ConfigurationError` when the Hub is unreachable or
    the revision is not in the offline cache, `DataError` for unknown repos, revisions or configs.
    """
    # The Hub is probed (or the offline pin checked) before `datasets` is imported: its ~1 s import would
    # otherwise come before an unreachable Hub is refused.
    if offline():
        if not FULL_SHA.fullmatch(revision):
            raise _offline_needs_sha(repo, revision)
        if not datasets_cache_root().is_dir():  # nothing was ever cached: no need to import datasets to say so
            raise _not_cached(repo, config, revision)
        import datasets

        dataset = _load_cached(repo, config, split, revision)
        commit = revision
    else:
        commit = resolve_revision(repo, revision)
        import datasets

        try:
            # The datasets/Hub cache (HF_HOME, HF_DATASETS_CACHE), not LoadOptions.cache_dir: that is
            # the harness's own cache, and Hub data is shared with every other datasets user.
            dataset = datasets.load_dataset(repo, config, split=split, revision=commit)
        except ValueError as exc:
            if "BuilderConfig" in str(exc) or "split" in str(exc).lower():
                raise DataError(
                    f"{repo}@{commit}: {exc}", "the repo's layout does not match its loader; check the declaration"
                ) from None
            raise
        except Exception as exc:
            if _is_network_error(exc):
                raise unreachable(repo, commit, type(exc).__name__) from exc
            if isinstance(exc, FileNotFoundError):
                raise DataError(
                    f"{repo}@{commit} config {config}: {exc}", "check repo and revision in the declaration"
                ) from None
            raise
    loaded = _loaded_commit(dataset)
    if loaded is not None and loaded != commit:
        raise ConfigurationError(
            f"{repo} config {config}: datasets returned commit {loaded} instead of {commit}",
            "remove that repo's folder from the datasets cache and load again",
        )
    for column in images:
        if column not in dataset.column_names:
            raise DataError(
                f"{repo}@{commit} config {config} has no '{column}' column",
                f"columns: {', '.join(dataset.column_names)}",
            )
        dataset = dataset.cast_column(column, datasets.Image(decode=False))
    return dataset, commit


def _load_cached(repo: str, config: str, split: str, revision: str):
    """Offline: exactly `revision` from the datasets cache.

    `load_dataset` offline takes the most recently written cached revision of a config, whatever its sha
    (its cache builder picks the newest folder). So the pinned commit's folder,
    `<namespace>___<name>/<config>/<version>/<sha>/`, is found here and its Arrow files opened with the public
    `Dataset.from_file` (memory-mapped, as `load_dataset` returns them), no private module of `datasets` needed.
    """
    import glob

    import datasets

    if not FULL_SHA.fullmatch(revision):
        raise _offline_needs_sha(repo, revision)
    namespace = repo.split("/")[0] if "/" in repo else None
    owner = f"{glob.escape(namespace)}___*" if namespace else "*"  # the name part is snake-cased by datasets
    folders = sorted(datasets_cache_root().glob(f"{owner}/{glob.escape(config)}/*/{revision}"))
    for folder in folders:
        single = folder / f"*-{glob.escape(split)}.arrow"
        shards = folder / f"*-{glob.escape(split)}-{'[0-9]' * 5}-of-{'[0-9]' * 5}.arrow"
        files = sorted(glob.glob(str(shards))) or sorted(glob.glob(str(single)))
        if not files or not (folder / "dataset_info.json").is_file():
            continue
        try:
            info = datasets.DatasetInfo.from_directory(str(folder))
            parts = [datasets.Dataset.from_file(file, info=info, split=split) for file in files]
        except (OSError, ValueError, KeyError) as exc:  # a torn or foreign cache folder
            raise _not_cached(repo, config, revision) from exc
        return parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts, info=info, split=split)
    raise _not_cached(repo, config, revision)


def datasets_cache_root() -> Path:
    """The folder `datasets` caches into, derived as `datasets.config` derives it (without importing it)."""
    import os

    given = os.environ.get("HF_DATASETS_CACHE")
    if given:
        return Path(given)
    xdg = os.environ.get("XDG_CACHE_HOME", "~/.cache")
    return Path(os.path.expanduser(os.environ.get("HF_HOME", os.path.join(xdg, "huggingface")))) / "datasets"


def _offline_needs_sha(repo: str, revision: str) -> ConfigurationError:
    return ConfigurationError(
        f"HF_HUB_OFFLINE=1 needs a full commit sha to load {repo}, got revision '{revision}'",
        "pin a 40-hex-digit sha (the declarations do) or unset HF_HUB_OFFLINE",
    )


def _not_cached(repo: str, config: str, commit: str) -> ConfigurationError:
    return ConfigurationError(
        f"{repo}@{commit} (config {config}) is not in the offline cache and HF_HUB_OFFLINE=1 is set",
        "download it once with network access (unset HF_HUB_OFFLINE), or set HF_ENDPOINT to a reachable mirror",
    )


def require_columns(dataset, where: str, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise DataError(
            f"{where}: missing column(s) {', '.join(missing)}",
            f"found {', '.join(dataset.column_names)}; the declared loader does not match this layout",
        )


def image_bytes(value, where: str) -> bytes:
    """Encoded bytes of one undecoded `Image` cell (`{"bytes": ..., "path": ...}`)."""
    data = value.get("bytes") if isinstance(value, dict) else None
    if not data:
        raise DataError(f"{where}: no embedded image bytes", "the repo must embed page images in its parquet files")
    return bytes(data)


def check_content(decl: BenchmarkDeclaration, options: LoadOptions) -> None:
    if options.content not in ("markdown", "images"):
        raise UsageError(f"benchmark {decl.name}: unknown --content {options.content}", "choose from markdown, images")
    decl.check_content(options.content)


def card_data(repo: str, revision: str) -> dict[str, Any] | None:
    """The YAML header of a dataset card (README.md) at one revision; None when there is none.

    One small file, read before any data file, so a loader can refuse what the repo cannot serve.
    """
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    commit = revision if offline() else resolve_revision(repo, revision)
    try:
        path = hf_hub_download(repo, "README.md", repo_type="dataset", revision=commit)
    except (EntryNotFoundError, LocalEntryNotFoundError):
        return None
    except Exception as exc:
        if _is_network_error(exc):
            raise unreachable(repo, commit, type(exc).__name__) from None
        raise
    return parse_card(Path(path).read_text(encoding="utf-8"), f"{repo}@{commit}/README.md")


def parse_card(text: str, where: str) -> dict[str, Any] | None:
    """The metadata block (`---` YAML `---`) of a card's text, or None without one.

    The block is found by huggingface_hub's own rule (`repocard.REGEX_YAML_BLOCK`, what `metadata_load` and the
    Hub use: blank lines before it, CRLF line ends and a BOM read as the Hub reads them) and parsed with
    libyaml's safe loader where PyYAML has it (the same documents, ~10x faster than the pure-Python one on a
    large card)."""
    import yaml
    from huggingface_hub.repocard import REGEX_YAML_BLOCK

    match = REGEX_YAML_BLOCK.search(text.removeprefix("\ufeff"))
    if match is None:
        return None
    try:
        data = yaml.load(match.group(2), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise DataError(f"{where}: the card's YAML header does not parse ({exc})", "pick another revision") from None
    return data if isinstance(data, dict) else None


def card_features(card: dict[str, Any] | None, config: str) -> set[str] | None:
    """Column names the card's `dataset_info` declares for one config; None when it declares none."""
    if not card:
        return None
    infos = card.get("dataset_info")
    entries = infos if isinstance(infos, list) else [infos] if isinstance(infos, dict) else []
    for entry in entries:
        if isinstance(entry, dict) and entry.get("config_name", "default") == config:
            features = entry.get("features")
            if isinstance(features, list):
                return {str(f.get("name")) for f in features if isinstance(f, dict) and f.get("name")}
            if isinstance(features, dict):
                return {str(name) for name in features}
    return None

"""Offline, a Hub config is read from exactly its pinned commit's cache folder with `datasets`' public file reader
(no private module): every shard of the split, in shard order, and never a newer folder of another commit."""

from __future__ import annotations

import os

import pytest

from evals_repro.base.errors import ConfigurationError
from evals_repro.benchmarks import hub

PINNED, NEWER = "a" * 40, "b" * 40


def write_cache(root, sha: str, shards: list[list[str]]) -> None:
    """A cache folder as `datasets` writes one for a Hub parquet config: Arrow IPC streams and dataset_info.json."""
    import datasets
    import pyarrow as pa

    folder = root / "org___my-set" / "docs" / "0.0.0" / sha
    folder.mkdir(parents=True)
    features = datasets.Features({"id": datasets.Value("string")})
    names = (
        [f"my-set-test-{i:05d}-of-{len(shards):05d}.arrow" for i in range(len(shards))]
        if len(shards) > 1
        else ["my-set-test.arrow"]
    )
    for name, ids in zip(names, shards, strict=True):
        table = pa.table({"id": ids})
        with pa.OSFile(str(folder / name), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    split = datasets.SplitInfo(
        name="test",
        num_examples=sum(map(len, shards)),
        shard_lengths=[len(ids) for ids in shards] if len(shards) > 1 else None,
        dataset_name="my-set",
    )
    info = datasets.DatasetInfo(features=features, dataset_name="my-set", config_name="docs", builder_name="parquet")
    info.splits = datasets.SplitDict({"test": split}, dataset_name="my-set")
    info.write_to_directory(str(folder))


@pytest.fixture
def offline_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path))
    monkeypatch.setattr(hub, "offline", lambda: True)
    return tmp_path


def test_every_shard_of_the_pinned_commit_in_order_not_the_newer_folder(offline_cache):
    write_cache(offline_cache, PINNED, [["d1", "d2"], ["d3"], ["d4", "d5"]])
    write_cache(offline_cache, NEWER, [["new"]])
    newer = offline_cache / "org___my-set" / "docs" / "0.0.0" / NEWER
    os.utime(newer, (newer.stat().st_mtime + 60,) * 2)  # the most recently written, as load_dataset would pick
    dataset, commit = hub.load_config("org/my-set", "docs", "test", PINNED)
    assert commit == PINNED and dataset["id"] == ["d1", "d2", "d3", "d4", "d5"]
    dataset, commit = hub.load_config("org/my-set", "docs", "test", NEWER)
    assert dataset["id"] == ["new"]


def test_a_commit_config_or_split_not_in_the_cache_is_one_line(offline_cache):
    write_cache(offline_cache, PINNED, [["d1"]])
    for config, split, sha in (("docs", "test", "c" * 40), ("other", "test", PINNED), ("docs", "train", PINNED)):
        with pytest.raises(ConfigurationError) as info:
            hub.load_config("org/my-set", config, split, sha)
        line = info.value.one_line()
        assert line.startswith(f"org/my-set@{sha} (config {config}) is not in the offline cache") and "\n" not in line

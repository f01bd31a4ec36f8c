"""The fake Hub speaks the Hub's HTTP API well enough for the real huggingface_hub client."""

from __future__ import annotations

from pathlib import Path

import pytest

SHA_A = "a" * 40
SHA_B = "b" * 40


@pytest.fixture(scope="module")
def repos(fake_hub):
    fake_hub.add_repo("fixture/generic", SHA_A, {"README.md": b"# a\n", "data/x.parquet": b"PAR1xx"})
    fake_hub.add_repo("fixture/generic", SHA_B, {"README.md": b"# b\n", "data/x.parquet": b"PAR1yy"})
    fake_hub.add_repo("fixture/a-model", SHA_A, {"config.json": b"{}"}, repo_type="model")
    return fake_hub


def test_files_resolve_at_each_commit_and_branch(repos):
    from huggingface_hub import HfApi, hf_hub_download

    path = hf_hub_download("fixture/generic", "data/x.parquet", repo_type="dataset", revision=SHA_A)
    assert Path(path).read_bytes() == b"PAR1xx"
    assert Path(hf_hub_download("fixture/generic", "README.md", repo_type="dataset")).read_bytes() == b"# b\n"
    api = HfApi()
    assert api.dataset_info("fixture/generic", revision="main").sha == SHA_B
    assert sorted(api.list_repo_files("fixture/generic", repo_type="dataset", revision=SHA_A)) == [
        "README.md",
        "data/x.parquet",
    ]
    (info,) = api.get_paths_info("fixture/generic", ["data/x.parquet"], repo_type="dataset", revision=SHA_A)
    assert info.size == 6 and info.lfs is not None


def test_models_and_typed_errors(repos):
    from huggingface_hub import HfApi, hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError

    assert Path(hf_hub_download("fixture/a-model", "config.json", revision=SHA_A)).read_bytes() == b"{}"
    with pytest.raises(RepositoryNotFoundError):
        HfApi().dataset_info("fixture/a-model")
    with pytest.raises(RevisionNotFoundError):
        HfApi().dataset_info("fixture/generic", revision="c" * 40)
    with pytest.raises(EntryNotFoundError):
        hf_hub_download("fixture/generic", "missing.txt", repo_type="dataset", revision=SHA_A)

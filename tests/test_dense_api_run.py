"""An API embedder end to end through `run` on `sample`: the real voyageai client against the fake,
then a warm re-run that makes zero requests and writes the same scores."""

from __future__ import annotations

import json

from evals_repro.cli import main
from fakes.voyage import FakeVoyage


def test_voyage_run_on_sample_then_warm_rerun_makes_zero_requests(monkeypatch, tmp_path, capsys):
    with FakeVoyage() as fake:
        monkeypatch.setenv("VOYAGE_API_KEY", "test-voyage-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", fake.url + "/v1")
        args = [
            "run",
            "voyage-4-lite",
            "--benchmark",
            "sample",
            "--subsets",
            "heat-pumps",
            "--results-dir",
            str(tmp_path / "results"),
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
        assert main(args) == 0
        cold = len(fake.requests)
        path = tmp_path / "results/sample/voyage-4-lite/heat-pumps.json"
        first = json.loads(path.read_text())
        assert cold >= 2 and first["usage"]["voyage_requests"] == cold
        assert first["usage"]["cache_misses"] > 0
        # the fake's bag-of-words vectors make retrieval meaningful: far above a random ranking
        assert first["metrics"]["ndcg_at_10"] > 0.3
        assert main(args) == 0
        assert len(fake.requests) == cold  # warm: every vector comes from the cache
        second = json.loads(path.read_text())
        assert second["metrics"] == first["metrics"]
        assert "voyage_requests" not in second["usage"] and second["usage"]["cache_hits"] > 0
        assert "test-voyage-key" not in path.read_text()
        assert "test-voyage-key" not in "".join(
            p.read_text(errors="ignore") for p in (tmp_path / "cache").rglob("*.json")
        )
    out = capsys.readouterr().err
    assert "cache hits" in out

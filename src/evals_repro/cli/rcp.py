"""`evals-repro rcp replay` and `evals-repro rcp pool`: check the rcp-ndcg-vidore-v3 release."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .application import app
from .options import LIST_HELP, split_list

rcp_app = typer.Typer(
    help="The rcp-ndcg ViDoRe v3 release: replay its tables, rebuild its pools.", no_args_is_help=True
)
app.add_typer(rcp_app, name="rcp")

_REVISION = typer.Option(None, "--revision", help="Release tag (v1, v2, v2-nvidia-...), or a full commit sha.")
_SNAPSHOT = typer.Option(None, "--snapshot", help="Read a local copy of the release (same layout) instead of the Hub.")


def _names(raw: Optional[list[str]], allowed: tuple[str, ...], what: str) -> list[str]:
    from ..base.errors import UsageError, choices

    names = split_list(raw, f"--{what}s")
    if not names:
        return list(allowed)
    for name in names:
        if name not in allowed:
            raise UsageError(f"unknown {what} '{name}'", f"choose from {choices(allowed)}")
    return names


@rcp_app.command("replay")
def replay_command(
    revision: Optional[str] = _REVISION,
    snapshot: Optional[Path] = _SNAPSHOT,
    domains: Optional[list[str]] = typer.Option(None, "--domains", help=f"Domains (default: all 8); {LIST_HELP}."),
    languages: Optional[list[str]] = typer.Option(
        None, "--languages", help=f"Query languages of the mean view (default: all 6); {LIST_HELP}."
    ),
) -> None:
    """Print the card's reranker tables (native and 6-language views, both tie rules) from provenance-runs."""
    from ..benchmarks.rcp_release import DOMAINS, LANGUAGES, Release
    from ..rcp.replay import format_tables, replay

    release = Release(revision=revision, snapshot=snapshot)
    result = replay(
        release, domains=_names(domains, DOMAINS, "domain"), languages=_names(languages, LANGUAGES, "language")
    )
    typer.echo(format_tables(result), nl=False)


@rcp_app.command("pool")
def pool_command(
    revision: Optional[str] = _REVISION,
    snapshot: Optional[Path] = _SNAPSHOT,
    subsets: Optional[list[str]] = typer.Option(
        None, "--subsets", "-s", help=f"Subsets {{domain}}__{{language}} (default: all 48); {LIST_HELP}."
    ),
) -> None:
    """Rebuild the judged pools (RRF of embed_v4, bm25, octen; k=60; top 150; ground-truth injection)."""
    from ..base.errors import DataError
    from ..benchmarks.rcp_release import SUBSETS, Release
    from ..rcp.pool import check_pools, format_report

    release = Release(revision=revision, snapshot=snapshot)
    checks = check_pools(release, _names(subsets, SUBSETS, "subset"))
    typer.echo(format_report(checks, str(release.revision)), nl=False)
    failed = [c for c in checks if not c.ok]
    if failed:
        raise DataError(
            f"pools not reproduced in {len(failed)} of {len(checks)} subsets", "see the lines above; check the revision"
        )

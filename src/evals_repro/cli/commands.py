"""Subcommand registry: each line imports a module that adds commands to `app`."""

from . import (
    benchmarks,  # noqa: F401
    costs,  # noqa: F401
    evaluate,  # noqa: F401
    rcp,  # noqa: F401
    report,  # noqa: F401
    reproduce,  # noqa: F401
    run,  # noqa: F401
    serve,  # noqa: F401
    stores,  # noqa: F401
    study,  # noqa: F401
    vidore_paper,  # noqa: F401
)

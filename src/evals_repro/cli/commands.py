"""Subcommand registry: each line imports a module that adds commands to `app`."""

from . import benchmarks  # noqa: F401
from . import evaluate  # noqa: F401
from . import rcp  # noqa: F401
from . import run  # noqa: F401
from . import stores  # noqa: F401
from . import study  # noqa: F401

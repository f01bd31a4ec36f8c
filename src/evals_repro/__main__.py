"""`python -m evals_repro ...`: the `evals-repro` command, for an interpreter without the script on PATH."""

import sys

from .cli import main

sys.exit(main())

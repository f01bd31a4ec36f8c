"""A plugin module whose import fails (its dependency is not installed)."""

import evals_repro_demo_missing_dependency  # noqa: F401


class Never:
    name = "demo-broken"

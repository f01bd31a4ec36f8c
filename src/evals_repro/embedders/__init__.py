"""Embedders: API models through their official SDKs and offline NumPy models.

Layer: components. May import base, the sources (metrics, providers, benchmarks) and the other components; never
methods, records, the runner, reports or the CLI.
"""

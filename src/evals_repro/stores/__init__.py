"""Mixedbread Stores: resumable upload of benchmark pages, and store search as a retrieval method.

Layer: components. May import base, the sources (metrics, providers, benchmarks) and the other components; never
methods, records, the runner, reports or the CLI.
"""

"""Checks of the rcp-ndcg ViDoRe v3 release: replay of its published tables (replay.py) and rebuild of its
judged pools (pool.py). Its files, tables and gain link are read by benchmarks/rcp_release.py,
rcp_tables.py and rcp_gain.py, beside the loader.

Layer: products. May import every layer up to the runner; never the CLI.
"""

"""A method name resolved to its pieces: the pipeline spec and the plugins that add components.

Owns the pipeline spec (`pipeline`: `bm25+cohere@50`, `rrf:a+b`, what a name builds and how it is keyed) and
the plugin and Python-object boundary (`plugins`: entry points, protocol checks, the origin of a component).

Layer: methods. May import base, the sources (metrics, providers, benchmarks) and the components (embedders,
retrieval, rerankers, stores); never the runner, reports or the CLI.
"""

"""`evals-repro reproduce`: every published figure of our sources as data, recomputed here and checked.

Owns the declarations (`published/`, loaded by `figures`), the matrix of statuses (`matrix`), the computations per
source (`rcp_card`: the rcp-ndcg ViDoRe v3 card from its release; `rerun`: the card's cells from our own runs of its
models; `results`: figures read from result records), what `reproduce --run` stores (`store`) and the published rows
`report --published` adds beside the user's methods (`beside`).

Layer: products. May import every layer up to the runner and the other products it recomputes with (`rcp`,
`planning`, `reporting`, `serving`); never the CLI.
"""

"""`evals-repro reproduce`: every published figure of our sources as data, recomputed here and checked.

Owns the declarations (`published/`, loaded into typed figures by `figures`), the matrix of statuses (`matrix`),
what computes each source's figures (`rcp_card` and `rcp_claims`: the rcp-ndcg ViDoRe v3 card from its release;
`rerun`: the card's cells from our own runs of its models; `results`: figures read from result records), the
command's flow with `--run` and `--max-cost` (`build`), what `--run` keeps on disk (`store`) and the published rows
`report --published` adds beside the user's methods (`beside`).

Layer: products. May import every layer up to the runner and the products it recomputes with (`rcp`, `planning`,
`reporting`, `serving`); never the CLI. Nothing imports it but the CLI.
"""

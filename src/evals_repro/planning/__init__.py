"""`--plan` of every paid command: what it would send, what is already held, how long, what it costs.

Each planner walks the work the way the command does (the same data, caches, journals and records,
the same batching) and counts into a `providers.plan.Plan`; nothing is sent and no key is needed.

Layer: products. May import every layer up to the runner; never the CLI.
"""

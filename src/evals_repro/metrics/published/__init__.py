"""Measures defined by a benchmark's or a tool's own published code rather than by trec_eval: float-gain
nDCG (rcp-ndcg), alpha-nDCG and ERR-IA (ndeval), nugget coverage (FreshStack), p-MRR and per-variant
means (FollowIR, as mteb computes them), Legal RAG Bench's relevant_passage_in_context."""

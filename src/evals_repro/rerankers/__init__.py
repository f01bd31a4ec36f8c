"""Rerankers over any first stage: Cohere, Voyage, Mixedbread through their official SDKs."""
